package form

import (
	"errors"
	"os"
	"strings"
	"testing"
)

// TestCheckReportsEveryMistake: a file of fifteen mistakes — values of
// the wrong type among them, which used to hide every other problem of
// their form — reports all fifteen in one run, each in plain words with
// its line.
func TestCheckReportsEveryMistake(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile("testdata/fifteen-mistakes.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = ParseSet(src, "fifteen-mistakes.yaml", nil)
	var de *DefinitionError
	if !errors.As(err, &de) {
		t.Fatalf("err = %v, want a DefinitionError", err)
	}
	want := []struct {
		line int
		msg  string
	}{
		{6, `type "txt" is not valid`},
		{7, `unknown field setting "requried"`},
		{8, `min 5 is greater than max 4`},
		{9, `capacity must be a whole number, got "two"`},
		{10, `when_full "maybe" is not valid`},
		{11, `unique[0] names "nope"`},
		{12, `per: "1 minute" is not a duration`},
		{13, `opens_at must be an RFC 3339 time`},
		{14, `min_seconds must be a number, got "soon"`},
		{15, `require_key must be true or false, got "perhaps"`},
		{19, `options is empty`},
		{20, `declared twice`},
		{21, `max_length must be a whole number, got "x"`},
		{22, `capacity -3 is negative`},
		{23, `retention: "forever" is not a duration`},
	}
	for _, w := range want {
		found := false
		for _, p := range de.Problems {
			found = found || (p.Line == w.line && strings.Contains(p.Msg, w.msg))
		}
		if !found {
			t.Errorf("no problem %q at line %d", w.msg, w.line)
		}
	}
	if len(de.Problems) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(de.Problems), len(want), err)
	}
	for _, p := range de.Problems {
		for _, goWords := range []string{"unmarshal", "!!str", "!!int", "into int", "[]string"} {
			if strings.Contains(p.Msg, goWords) {
				t.Errorf("a problem in Go's words (%s): %s", goWords, p)
			}
		}
	}
}
