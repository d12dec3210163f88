package admin_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/server/servertest"
)

const scenarioForms = `
id: club
site: chess
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
unique: [[email]]
capacity: 1
when_full: waitlist
---
id: other
site: go
fields:
  - {name: name, type: text}
`

// TestAdminAPIScenarios covers the admin API's answers in order, as an
// owner and a viewer of one site meet them: who may call at all, what a
// role may do, the entries and their actions, and bad input with its
// problem code. Later rows use what earlier rows made (an entry's id, the
// viewer's token).
func TestAdminAPIScenarios(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, scenarioForms, servertest.Options{})
	var entryID, viewerID, viewerToken string
	viewer := func() string { return viewerToken }
	keep := func(field string, into *string) func(*testing.T, *http.Response, []byte) {
		return func(t *testing.T, _ *http.Response, body []byte) {
			var doc map[string]any
			if err := json.Unmarshal(body, &doc); err != nil {
				t.Fatal(err)
			}
			s, _ := doc[field].(string)
			if s == "" {
				t.Fatalf("no %q in %s", field, body)
			}
			*into = s
		}
	}
	submit := func(key, body string) servertest.Scenario {
		return servertest.Scenario{Name: "a registration " + key, Method: "POST", URL: "/v1/forms/club/submissions",
			Headers: map[string]string{"Content-Type": "application/json", "Idempotency-Key": key}, Body: []byte(body), ExpectedStatus: 201}
	}
	first := submit("k-1", `{"name":"Ann","email":"ann@example.org"}`)
	first.Check = keep("id", &entryID)
	jsonBody := map[string]string{"Content-Type": "application/json"}
	h.RunScenarios(t, []servertest.Scenario{
		{Name: "401 unauthorized without a token", Method: "GET", URL: "/v1/admin/forms", ExpectedStatus: 401, ExpectedCode: problem.CodeUnauthorized},
		{Name: "401 unauthorized with a token nobody issued", Method: "GET", URL: "/v1/admin/forms", AsToken: func() string { return "formd_nosuchtoken" },
			ExpectedStatus: 401, ExpectedCode: problem.CodeUnauthorized},
		{Name: "the OpenAPI document needs no token", Method: "GET", URL: "/v1/admin/openapi.json", ExpectedStatus: 200,
			ExpectedContent: []string{`"openapi"`, "/v1/admin/forms"}},
		{Name: "200 the forms", Method: "GET", URL: "/v1/admin/forms", Token: true, ExpectedStatus: 200,
			ExpectedContent: []string{`"club"`, `"other"`}},
		first,
		submit("k-2", `{"name":"Bo","email":"bo@example.org"}`),
		{Name: "200 the entries, the second waitlisted", Method: "GET", URL: "/v1/admin/forms/club/entries", Token: true, ExpectedStatus: 200,
			ExpectedContent: []string{"ann@example.org", "bo@example.org", `"waitlisted"`}},
		{Name: "200 one entry", Method: "GET", URLOf: func() string { return "/v1/admin/forms/club/entries/" + entryID }, Token: true,
			ExpectedStatus: 200, ExpectedContent: []string{"ann@example.org"}},
		{Name: "404 form-not-found", Method: "GET", URL: "/v1/admin/forms/nope/entries", Token: true, ExpectedStatus: 404, ExpectedCode: problem.CodeFormNotFound},
		{Name: "404 entry-not-found", Method: "GET", URL: "/v1/admin/forms/club/entries/nope", Token: true, ExpectedStatus: 404, ExpectedCode: problem.CodeEntryNotFound},
		{Name: "404 entry-not-found for a cancel", Method: "POST", URL: "/v1/admin/forms/club/entries/nope/cancel", Token: true,
			ExpectedStatus: 404, ExpectedCode: problem.CodeEntryNotFound},
		{Name: "400 invalid-request for an unknown export format", Method: "GET", URL: "/v1/admin/forms/club/export?format=pdf", Token: true,
			ExpectedStatus: 400, ExpectedCode: problem.CodeInvalidRequest},
		{Name: "200 the export as CSV", Method: "GET", URL: "/v1/admin/forms/club/export?format=csv", Token: true, ExpectedStatus: 200,
			ExpectedHeaders: map[string]string{"Content-Type": ""}, ExpectedContent: []string{"ann@example.org"}},
		{Name: "422 invalid-form-definition for a definition that does not parse", Method: "PUT", URL: "/v1/admin/forms", Token: true,
			Headers: map[string]string{"Content-Type": "application/yaml"}, Body: []byte("id: [broken\n"), ExpectedStatus: 422, ExpectedCode: problem.CodeInvalidDefinition},
		{Name: "400 invalid-request for a forget without a person", Method: "POST", URL: "/v1/admin/forget", Token: true,
			Headers: jsonBody, Body: []byte(`{}`), ExpectedStatus: 400, ExpectedCode: problem.CodeInvalidRequest},
		{Name: "404 for a job that does not exist", Method: "GET", URL: "/v1/admin/jobs/nope", Token: true, ExpectedStatus: 404, ExpectedCode: problem.CodeNotFound},
		{Name: "400 invalid-request for an account that is not JSON", Method: "POST", URL: "/v1/admin/accounts", Token: true,
			Headers: jsonBody, Body: []byte(`not json`), ExpectedStatus: 400, ExpectedCode: problem.CodeInvalidRequest},
		{Name: "422 invalid-account for a role that does not exist", Method: "POST", URL: "/v1/admin/accounts", Token: true,
			Headers: jsonBody, Body: []byte(`{"email":"x@example.org","name":"X","role":"king","sites":["chess"],"password":"correct horse battery"}`),
			ExpectedStatus: 422, ExpectedCode: problem.CodeInvalidAccount},
		{Name: "201 a viewer of the chess site", Method: "POST", URL: "/v1/admin/accounts", Token: true,
			Headers: jsonBody, Body: []byte(`{"email":"viewer@example.org","name":"Vi","role":"viewer","sites":["chess"],"password":"correct horse battery"}`),
			ExpectedStatus: 201, NotExpectedContent: []string{"correct horse"}, Check: keep("id", &viewerID)},
		{Name: "409 email-taken for the same e-mail again", Method: "POST", URL: "/v1/admin/accounts", Token: true,
			Headers: jsonBody, Body: []byte(`{"email":"Viewer@Example.org","name":"Vi","role":"viewer","sites":["chess"],"password":"correct horse battery"}`),
			ExpectedStatus: 409, ExpectedCode: problem.CodeEmailTaken},
		{Name: "201 a token for the viewer", Method: "POST", URLOf: func() string { return "/v1/admin/accounts/" + viewerID + "/tokens" }, Token: true,
			Headers: jsonBody, Body: []byte(`{"name":"dashboard"}`), ExpectedStatus: 201, Check: keep("token", &viewerToken)},
		{Name: "the viewer reads its site's entries", Method: "GET", URL: "/v1/admin/forms/club/entries", AsToken: viewer, ExpectedStatus: 200,
			ExpectedContent: []string{"ann@example.org"}},
		{Name: "403 forbidden: the viewer may not cancel", Method: "POST", URLOf: func() string { return "/v1/admin/forms/club/entries/" + entryID + "/cancel" },
			AsToken: viewer, ExpectedStatus: 403, ExpectedCode: problem.CodeForbidden},
		{Name: "the viewer does not see another site's form", Method: "GET", URL: "/v1/admin/forms/other/entries", AsToken: viewer,
			ExpectedStatus: 404, ExpectedCode: problem.CodeFormNotFound},
		{Name: "403 forbidden: the viewer may not manage accounts", Method: "GET", URL: "/v1/admin/accounts", AsToken: viewer,
			ExpectedStatus: 403, ExpectedCode: problem.CodeForbidden},
		{Name: "200 the owner cancels the first entry", Method: "POST", URLOf: func() string { return "/v1/admin/forms/club/entries/" + entryID + "/cancel" },
			Token: true, ExpectedStatus: 200, ExpectedContent: []string{`"cancelled"`}},
		{Name: "409 entry-not-live to cancel it again", Method: "POST", URLOf: func() string { return "/v1/admin/forms/club/entries/" + entryID + "/cancel" },
			Token: true, ExpectedStatus: 409, ExpectedCode: problem.CodeEntryNotLive},
		{Name: "the audit log says who cancelled", Method: "GET", URL: "/v1/admin/audit-log", Token: true, ExpectedStatus: 200,
			ExpectedContent: []string{"cancel"}, NotExpectedContent: []string{"ann@example.org"}},
		{Name: "404 not-found for a path the API does not have", Method: "GET", URL: "/v1/admin/nothing-here", Token: true, ExpectedStatus: 404, ExpectedCode: problem.CodeNotFound},
	})
}
