package admin

import (
	_ "embed"
	"net/http"
)

// OpenAPI is the admin API's OpenAPI 3.1 document, written by hand; a test
// checks it against the routes Register adds and validates it.
//
//go:embed openapi.json
var OpenAPI []byte

// serveOpenAPI is GET /v1/admin/openapi.json, open to anyone: it
// describes the API, it reveals no data.
func serveOpenAPI(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "public, max-age=300")
	w.Write(OpenAPI) //nolint:errcheck // the client may be gone
}
