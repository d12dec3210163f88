package wecom

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestTruncate: a long message is cut within the robot's 2048 bytes,
// never inside a character.
func TestTruncate(t *testing.T) {
	t.Parallel()
	s := strings.Repeat("报名", 600) // 3,600 bytes
	got := Truncate(s, maxContent)
	if len(got) > maxContent || !utf8.ValidString(got) || !strings.HasSuffix(got, "…") {
		t.Fatalf("%d bytes, valid %v", len(got), utf8.ValidString(got))
	}
	if Truncate("short", maxContent) != "short" {
		t.Fatal("a short message changed")
	}
}
