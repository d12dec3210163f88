package erasure_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

func del(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest("DELETE", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

// TestDeleteAFormWithEntries: once a form with entries and drafts is
// deleted with its id typed, no file under the data directory — the
// journal, the store, their WAL files — holds what was sent to it, while
// another form's entries and drafts are untouched; the id is free again
// for a fresh form.
func TestDeleteAFormWithEntries(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, forgetForms, servertest.Options{})
	for _, s := range []struct{ form, body string }{
		{"workshop", `{"name":"Cordelia Vane","contact":"cordelia@example.org"}`},
		{"workshop", `{"name":"Dmitri Oakes"}`},
		{"fair", `{"name":"Bo Rivers","email":"bo@example.org"}`},
	} {
		if code, b := post(t, h.URL+"/v1/forms/"+s.form+"/submissions", "", s.body); code != 201 {
			t.Fatalf("%s: %d %s", s.body, code, b)
		}
	}
	req, err := http.NewRequest("PUT", h.URL+"/v1/forms/workshop/drafts/d1", strings.NewReader(`{"name":"Eliza Draftwell"}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 201 {
		t.Fatalf("draft: %d", resp.StatusCode)
	}
	gone := []string{"Cordelia Vane", "cordelia@example.org", "Dmitri Oakes", "Eliza Draftwell"}
	for _, v := range append(gone, "Bo Rivers") {
		if len(filesHolding(t, h.Data, v)) == 0 {
			t.Fatalf("before: no file holds %q; the scan cannot tell anything", v)
		}
	}
	code, b := del(t, h.URL+"/v1/admin/forms/workshop", h.Token)
	if code != 409 || !bytes.Contains(b, []byte(`"form-delete-unconfirmed"`)) || !bytes.Contains(b, []byte(`"entries":{"stored":2}`)) || !bytes.Contains(b, []byte(`"drafts":1`)) {
		t.Fatalf("unconfirmed: %d %s", code, b)
	}
	code, b = del(t, h.URL+"/v1/admin/forms/workshop?confirm=workshop", h.Token)
	if code != 200 || !bytes.Contains(b, []byte(`"deleted":true`)) || !bytes.Contains(b, []byte(`"journal_kept":false`)) {
		t.Fatalf("delete: %d %s", code, b)
	}
	for _, v := range gone {
		if files := filesHolding(t, h.Data, v); len(files) > 0 {
			t.Errorf("after deleting the form, %v still hold %q", files, v)
		}
	}
	if len(filesHolding(t, h.Data, "Bo Rivers")) == 0 {
		t.Error("another form's entry was erased too")
	}
	if code, b := post(t, h.URL+"/v1/forms/workshop/submissions", "", `{"name":"Late"}`); code != 404 {
		t.Fatalf("a submission to the deleted form: %d %s", code, b)
	}
}
