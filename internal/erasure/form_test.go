package erasure_test

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal/natsjournal/natstest"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
)

func del(t *testing.T, url, token string) (int, []byte) {
	t.Helper()
	return send(t, "DELETE", url, token, "")
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
	if code, b := send(t, "PUT", h.URL+"/v1/forms/workshop/drafts/d1", "", `{"name":"Eliza Draftwell"}`); code != 201 {
		t.Fatalf("draft: %d %s", code, b)
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

// TestDeleteAFormOnNATSAndPostgres: on the scale-out drivers, deleting a
// form deletes each of its entries from the NATS stream (a secure delete)
// and every row of it from PostgreSQL; another form's entry stays in both.
func TestDeleteAFormOnNATSAndPostgres(t *testing.T) {
	t.Parallel()
	nurl := natstest.ExternalURL(t)
	storeURL := pgtest.URL(t)
	h := servertest.Start(t, forgetForms, servertest.Options{Config: func(c *config.Config) {
		c.Journal, c.Store, c.NATSStream = nurl, storeURL, natstest.Name("delform")
	}})
	for _, s := range []struct{ form, key, body string }{
		{"workshop", "w1", `{"name":"Cordelia Vane"}`},
		{"workshop", "w2", `{"name":"Dmitri Oakes"}`},
		{"fair", "f1", `{"name":"Bo Rivers","email":"bo@example.org"}`},
	} {
		req, err := http.NewRequest("POST", h.URL+"/v1/forms/"+s.form+"/submissions", strings.NewReader(s.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", s.key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 201 {
			t.Fatalf("%s: %d", s.key, resp.StatusCode)
		}
	}
	// An entry is acknowledged in the stream just after its answer:
	// until then the deletion says to try again in a moment.
	var code int
	var b []byte
	poll.Until(t, "the deletion past form-busy", 20*time.Second, func() bool {
		code, b = del(t, h.URL+"/v1/admin/forms/workshop?confirm=workshop", h.Token)
		return code != 409 || !bytes.Contains(b, []byte(`"form-busy"`))
	})
	if code != 200 || !bytes.Contains(b, []byte(`"erased":{"entries":{"stored":2}`)) || !bytes.Contains(b, []byte(`"journal_kept":false`)) {
		t.Fatalf("delete: %d %s", code, b)
	}
	ctx := context.Background()
	for _, key := range []string{"w1", "w2"} {
		if _, found, err := h.Server.Journal.Lookup(ctx, "workshop", key); found || err != nil {
			t.Errorf("the stream keeps workshop/%s: %v %v", key, found, err)
		}
	}
	if _, found, err := h.Server.Journal.Lookup(ctx, "fair", "f1"); !found || err != nil {
		t.Errorf("another form's entry left the stream: %v %v", found, err)
	}
	c, err := h.Server.Store.FormContents(ctx, "workshop")
	if err != nil || !c.Empty() {
		t.Errorf("the store after the deletion: %+v %v", c, err)
	}
	if c, err := h.Server.Store.FormContents(ctx, "fair"); err != nil || c.EntryCount() != 1 {
		t.Errorf("the other form in the store: %+v %v", c, err)
	}
}
