package server_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/poll"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// A form applied to the store from outside (formd forms apply, another
// instance) reaches a running server at its next forms refresh (500 ms by
// default), without a restart.
func TestRunningServerSeesAppliedForms(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: first\nfields: [{name: x, type: text}]\n", servertest.Options{})
	get := func() int {
		resp, err := http.Get(h.URL + "/v1/forms/later")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(); code != 404 {
		t.Fatalf("before: %d", code)
	}
	// What formd forms apply does: its own connection to the store's file.
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: h.Data + "/store.db"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	forms, err := form.Parse([]byte("id: later\nfields: [{name: y, type: text}]\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutForms(context.Background(), form.Records(forms)); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the running server to serve the applied form", 15*time.Second, func() bool { return get() == 200 })
}
