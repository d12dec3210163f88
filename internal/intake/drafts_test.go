package intake_test

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server/servertest"
)

const draftForms = `
id: apply
fields:
  - {name: name,  type: text,  required: true}
  - {name: essay, type: textarea}
unique: [[name]]
capacity: 1
when_full: reject
drafts: true
draft_ttl: 7d
---
id: plain
fields: [{name: name, type: text}]
`

func draftReq(method, path, body string, headers map[string]string) req {
	r := req{method: method, path: path, body: body, headers: headers}
	if body != "" {
		r.ctype = "application/json"
	}
	return r
}

// TestDrafts: a draft saved, read, saved again with its version, refused
// when stale or opened with another token, consumed by the submission of
// its key (then 409 naming the entry's status), never holding a place;
// on the embedded fast path and through the processor.
func TestDrafts(t *testing.T) {
	t.Parallel()
	for _, path := range []struct {
		name     string
		atAppend bool
	}{{"fast path", true}, {"processor", false}} {
		t.Run(path.name, func(t *testing.T) {
			t.Parallel()
			h := servertest.Start(t, draftForms, servertest.Options{Config: func(c *config.Config) { c.DecideAtAppend = path.atAppend }})
			c := servertest.Client()
			const url = "/v1/forms/apply/drafts/k1"
			do := func(r req, wantStatus int, wantCode string) (*http.Response, map[string]any) {
				t.Helper()
				resp, body := send(t, c, h.URL, r)
				var m map[string]any
				if err := json.Unmarshal(body, &m); err != nil {
					t.Fatalf("%s %s: %d %s", r.method, r.path, resp.StatusCode, body)
				}
				if resp.StatusCode != wantStatus || (wantCode != "" && m["code"] != wantCode) {
					t.Fatalf("%s %s: %d %s, want %d %s", r.method, r.path, resp.StatusCode, body, wantStatus, wantCode)
				}
				return resp, m
			}
			resp, first := do(draftReq("PUT", url, `{"name":"Ann","essay":"Once"}`, nil), 201, "")
			tok, _ := first["resume"].(string)
			if tok == "" || resp.Header.Get("ETag") != `"1"` || first["resume_url"] != "/f/apply?resume="+tok {
				t.Fatalf("first save: %v %v", resp.Header, first)
			}
			withTok := func(extra ...string) map[string]string {
				m := map[string]string{"Draft-Token": tok}
				for i := 0; i+1 < len(extra); i += 2 {
					m[extra[i]] = extra[i+1]
				}
				return m
			}
			for _, sc := range []struct {
				name    string
				r       req
				status  int
				code    string
				etag    string
				version float64
			}{
				{"read", draftReq("GET", url, "", withTok()), 200, "", `"1"`, 1},
				{"save with its version", draftReq("PUT", url, `{"name":"Ann","essay":"Once upon"}`, withTok("If-Match", `"1"`)), 200, "", `"2"`, 2},
				{"an older tab", draftReq("PUT", url, `{"name":"Ann","essay":"O"}`, withTok("If-Match", `"1"`)), 412, "draft-version-mismatch", `"2"`, 2},
				{"a save without If-Match", draftReq("PUT", url, `{"name":"A"}`, withTok()), 400, "invalid-request", "", 0},
				{"another token", draftReq("PUT", url, `{}`, map[string]string{"Draft-Token": "nope", "If-Match": `"2"`}), 404, "draft-not-found", "", 0},
				{"another token reads", draftReq("GET", url, "", map[string]string{"Draft-Token": "nope"}), 404, "draft-not-found", "", 0},
				{"no token reads", draftReq("GET", url, "", nil), 404, "draft-not-found", "", 0},
				{"a second creation", draftReq("PUT", url, `{"name":"B"}`, nil), 409, "draft-exists", "", 0},
				{"not an object", draftReq("PUT", url, `["x"]`, withTok("If-Match", `"2"`)), 400, "invalid-request", "", 0},
				{"a form without drafts", draftReq("PUT", "/v1/forms/plain/drafts/k1", `{}`, nil), 404, "drafts-disabled", "", 0},
				{"the resume link", draftReq("GET", "/v1/forms/apply/drafts?resume="+tok, "", nil), 200, "", `"2"`, 2},
			} {
				resp, m := do(sc.r, sc.status, sc.code)
				if sc.etag != "" && resp.Header.Get("ETag") != sc.etag {
					t.Fatalf("%s: ETag %q, want %s", sc.name, resp.Header.Get("ETag"), sc.etag)
				}
				if sc.version != 0 && m["version"] != sc.version {
					t.Fatalf("%s: version %v, want %v", sc.name, m["version"], sc.version)
				}
			}
			_, m := do(draftReq("GET", url, "", withTok()), 200, "")
			if d, _ := m["data"].(map[string]any); d["essay"] != "Once upon" || m["key"] != "k1" {
				t.Fatalf("read after the save: %v", m)
			}
			// Drafts hold no place: another key's draft, then the one
			// place taken by a third key's submission.
			do(draftReq("PUT", "/v1/forms/apply/drafts/k2", `{"name":"Bo"}`, nil), 201, "")
			if resp, body := send(t, c, h.URL, jsonReq("apply", "k1", `{"name":"Ann","essay":"Once upon a time"}`)); resp.StatusCode != 201 {
				t.Fatalf("the submission of the draft's key: %d %s", resp.StatusCode, body)
			}
			// The decision consumed the draft: it names the entry's status.
			_, m = do(draftReq("GET", url, "", withTok()), 409, "draft-submitted")
			if m["entry_status"] != "stored" {
				t.Fatalf("read after the submission: %v", m)
			}
			do(draftReq("PUT", url, `{"name":"Ann"}`, withTok("If-Match", `"2"`)), 409, "draft-submitted")
			do(draftReq("PUT", url, `{"name":"Ann"}`, nil), 409, "draft-submitted")
			do(draftReq("GET", "/v1/forms/apply/drafts?resume="+tok, "", nil), 404, "draft-not-found")
			// The place went to the submission, not to the drafts: the
			// form is full now.
			if resp, body := send(t, c, h.URL, jsonReq("apply", "k2", `{"name":"Bo"}`)); resp.StatusCode != 409 {
				t.Fatalf("a second submission on a full form: %d %s", resp.StatusCode, body)
			}
		})
	}
}
