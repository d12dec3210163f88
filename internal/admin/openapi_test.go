package admin_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/formd/formd/internal/admin"
	"github.com/getkin/kin-openapi/openapi3"
)

// recorder is a Mux that lists what is registered on it.
type recorder []string

func (r *recorder) Handle(pattern string, _ http.Handler) { *r = append(*r, pattern) }

// TestOpenAPIMatchesTheRoutes: the document validates as OpenAPI 3.1, and
// its paths and methods are exactly the routes Register adds: every route
// documented, every documented route there.
func TestOpenAPIMatchesTheRoutes(t *testing.T) {
	t.Parallel()
	loader := openapi3.NewLoader()
	doc, err := loader.LoadFromData(admin.OpenAPI)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Fatalf("openapi %q, want 3.1", doc.OpenAPI)
	}
	if err := doc.Validate(context.Background()); err != nil {
		t.Fatalf("the document does not validate: %v", err)
	}
	var documented []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			documented = append(documented, method+" "+path)
		}
	}
	var routes recorder
	admin.New(admin.Deps{}).Register(&routes)
	slices.Sort(documented)
	slices.Sort(routes)
	for _, r := range routes {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is not documented", r)
		}
	}
	for _, d := range documented {
		if !slices.Contains(routes, d) {
			t.Errorf("documented %s is not a route", d)
		}
	}
}
