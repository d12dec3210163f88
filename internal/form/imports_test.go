package form

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Package form is the definitions every stage reads; it depends on no
// stage of the pipeline (intake, journal, processor, store, outbox), so
// that none of them can pull the others in through it. Of formd's own
// packages it imports only webhooks, for the syntax of a webhook's URL and
// secret in a definition, and webhooks imports only attempt (the word for an
// attempt's outcome), which imports none; and loop, the interval of the
// registry's refresh, which imports none.
func TestImportsNoPipeline(t *testing.T) {
	t.Parallel()
	allowed := map[string]bool{"github.com/formd/formd/internal/webhooks": true, "github.com/formd/formd/internal/loop": true}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/formd/formd/") && !allowed[path] {
				t.Errorf("%s imports %s: form must not depend on the pipeline; move the type it needs here, or take a small interface", name, path)
			}
		}
	}
}
