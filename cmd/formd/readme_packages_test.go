package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The README's "How it works" names the packages and files as the tree
// has them: every path it names in backquotes is there, and every
// package under internal/ is named.
func TestReadmeNamesThePackages(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(raw)
	i := strings.Index(s, "\n## How it works\n")
	if i < 0 {
		t.Fatal(`README.md has no "## How it works"`)
	}
	s = s[i+1:]
	if j := strings.Index(s[3:], "\n## "); j >= 0 {
		s = s[:j+3]
	}
	paths := regexp.MustCompile("`((?:internal|cmd)/[a-z0-9_./]+|client)`").FindAllStringSubmatch(s, -1)
	if len(paths) < 10 {
		t.Fatalf("%d package paths in How it works, want the data path's packages named", len(paths))
	}
	named := map[string]bool{}
	for _, m := range paths {
		named[m[1]] = true
		if _, err := os.Stat(filepath.Join("../..", m[1])); err != nil {
			t.Errorf("How it works names %s, which the tree does not have", m[1])
		}
	}
	// And the other way: every package directly under internal/ is named,
	// so that a new room appears in the README with it.
	dirs, err := os.ReadDir("../../internal")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range dirs {
		if d.IsDir() && !named["internal/"+d.Name()] {
			t.Errorf("How it works does not name internal/%s", d.Name())
		}
	}
}
