package server_test

import (
	"io"
	"net/http"
	"net/url"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

// TestAdminTokenIssuedOnce: the store decides that one start issues the
// admin token and the setup link; a restart, even with the token never
// used, issues neither and keeps the printed ones working.
func TestAdminTokenIssuedOnce(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	get := func(h *servertest.Harness, token string) int {
		req, _ := http.NewRequest("GET", h.URL+"/v1/admin/forms", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	h1 := servertest.Start(t, "", servertest.Options{Data: data})
	first, code := h1.Token, h1.Server.SetupCode
	if first == "" || code == "" {
		t.Fatalf("first start: token %q, setup code %q; want both", first, code)
	}
	h1.Stop()
	h2 := servertest.Start(t, "", servertest.Options{Data: data})
	if h2.Token != "" || h2.Server.SetupCode != "" || !h2.Server.SetupPending {
		t.Fatalf("second start, the token never used: token %q, setup code %q, pending %v; want none issued", h2.Token, h2.Server.SetupCode, h2.Server.SetupPending)
	}
	if code := get(h2, first); code != 200 {
		t.Fatalf("the first token after a restart: %d, want 200", code)
	}
	// The link the first start printed still makes the first account.
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.PostForm(h2.URL+"/admin/setup", url.Values{"code": {code}, "email": {"ann@example.org"}, "password": {"correct horse battery staple"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/admin/forms?done=set-up" {
		t.Fatalf("the first start's setup link after a restart: %d %s, want 303 to the forms", resp.StatusCode, resp.Header.Get("Location"))
	}
}
