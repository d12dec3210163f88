package erasure_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

const forgetForms = `
id: fair
fields:
  - {name: name,  type: text,  required: true}
  - {name: email, type: email, required: true}
  - {name: phone, type: phone, region: CN}
unique: [[email]]
---
id: workshop
drafts: true
fields:
  - {name: name,    type: text, required: true}
  - {name: contact, type: email}
`

func post(t *testing.T, url, token, body string) (int, []byte) {
	t.Helper()
	return send(t, "POST", url, token, body)
}

// send makes one request of the test server and reads its answer: body,
// when there is one, sent as JSON, and token, when there is one, as the
// bearer.
func send(t *testing.T, method, url, token, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// filesHolding lists the files under dir (the WAL and shared-memory files
// included) whose bytes contain s.
func filesHolding(t *testing.T, dir, s string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, filepath.Base(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestForgetAPerson: after a person is forgotten, no file under the data
// directory — the journal, the store, their WAL files — holds what they
// sent, while another person's entry is untouched and the rows stay.
func TestForgetAPerson(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forgetForms, servertest.Options{})
	for _, s := range []struct{ form, key, body string }{
		{"fair", "ann-1", `{"name":"Annabel Lee","email":"ann@example.org","phone":"138 0013 8000"}`},
		{"workshop", "ann-2", `{"name":"Annabel Lee","contact":"Ann@Example.org"}`},
		{"fair", "bo-1", `{"name":"Bo Rivers","email":"bo@example.org"}`},
	} {
		code, b := post(t, h.URL+"/v1/forms/"+s.form+"/submissions", "", s.body)
		if code != 201 {
			t.Fatalf("%s: %d %s", s.key, code, b)
		}
	}
	// A draft of Ann's, typed in another spelling, and one of Bo's.
	for key, body := range map[string]string{"ann-draft": `{"name":"Ann Draft","contact":" ANN@example.org"}`, "bo-draft": `{"name":"Bo Draft","contact":"bo@example.org"}`} {
		if code, b := send(t, "PUT", h.URL+"/v1/forms/workshop/drafts/"+key, "", body); code != 201 {
			t.Fatalf("draft %s: %d %s", key, code, b)
		}
	}
	for _, v := range []string{"ann@example.org", "Annabel Lee", "+8613800138000", "bo@example.org", "Ann Draft"} {
		if len(filesHolding(t, h.Data, v)) == 0 {
			t.Fatalf("before: no file holds %q; the scan cannot tell anything", v)
		}
	}
	code, b := post(t, h.URL+"/v1/admin/forget", h.Token, `{"email":"ＡＮＮ@example.org","dry_run":true}`)
	if code != 200 || !bytes.Contains(b, []byte(`"entries":2`)) || !bytes.Contains(b, []byte(`"erased":0`)) {
		t.Fatalf("dry run: %d %s", code, b)
	}
	code, b = post(t, h.URL+"/v1/admin/forget", h.Token, `{"email":"ＡＮＮ@example.org"}`)
	var rep struct {
		Entries, Erased, Pending, Drafts int
		Forms                            map[string]int
	}
	if code != 200 || json.Unmarshal(b, &rep) != nil || rep.Erased != 2 || rep.Drafts != 1 || rep.Pending != 0 || rep.Forms["fair"] != 1 || rep.Forms["workshop"] != 1 {
		t.Fatalf("forget: %d %s", code, b)
	}
	if bytes.Contains(b, []byte("ann@")) {
		t.Fatalf("the answer repeats the erased address: %s", b)
	}
	for _, v := range []string{"ann@example.org", "Ann@Example.org", "Annabel Lee", "+8613800138000", "13800138000", "Ann Draft"} {
		if files := filesHolding(t, h.Data, v); len(files) > 0 {
			t.Errorf("after forgetting, %v still hold %q", files, v)
		}
	}
	if len(filesHolding(t, h.Data, "Bo Draft")) == 0 {
		t.Error("another person's draft was erased too")
	}
	if len(filesHolding(t, h.Data, "bo@example.org")) == 0 {
		t.Error("another person's entry was erased too")
	}
	// The rows stay, so a retry of the key is still answered.
	if code, b := post(t, h.URL+"/v1/forms/fair/submissions", "", `{"name":"Annabel Lee","email":"ann@example.org"}`); code != 201 {
		// A new registration of the forgotten person is a new entry: the
		// claim went with the data.
		t.Fatalf("registering again after being forgotten: %d %s", code, b)
	}
	code, b = post(t, h.URL+"/v1/admin/forget", h.Token, `{"phone":"12"}`)
	if code != 400 || !bytes.Contains(b, []byte("phone")) {
		t.Fatalf("a bad phone number: %d %s", code, b)
	}
}
