package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// docs/how-it-works.md names the packages and files as the tree has
// them: every path it names in backquotes is there, and every package
// under internal/ is named.
func TestReadmeNamesThePackages(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../docs/how-it-works.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	if !strings.HasPrefix(s, "# How it works\n") {
		t.Fatal(`docs/how-it-works.md does not begin with "# How it works"`)
	}
	paths := regexp.MustCompile("`((?:internal|cmd)/[a-z0-9_./]+|client)`").FindAllStringSubmatch(s, -1)
	if len(paths) < 10 {
		t.Fatalf("%d package paths in docs/how-it-works.md, want the data path's packages named", len(paths))
	}
	named := map[string]bool{}
	for _, m := range paths {
		named[m[1]] = true
		if _, err := os.Stat(filepath.Join("../..", m[1])); err != nil {
			t.Errorf("docs/how-it-works.md names %s, which the tree does not have", m[1])
		}
	}
	// And the other way: every package directly under internal/ is named,
	// so that a new room appears in the docs with it.
	dirs, err := os.ReadDir("../../internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !named["internal/"+d.Name()] {
			t.Errorf("docs/how-it-works.md does not name internal/%s", d.Name())
		}
	}
}
