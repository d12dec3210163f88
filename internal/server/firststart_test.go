package server_test

import (
	"io"
	"net/http"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

// TestAdminTokenUntilFirstUse: the admin token is issued again at each
// start until it is first used, so one printed where nobody read it is
// never the only way in; once used, it is never replaced by a start.
func TestAdminTokenUntilFirstUse(t *testing.T) {
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
	first := h1.Token
	if first == "" || h1.Server.SetupCode == "" {
		t.Fatalf("first start: token %q, setup code %q; want both", first, h1.Server.SetupCode)
	}
	h1.Stop()
	h2 := servertest.Start(t, "", servertest.Options{Data: data})
	second := h2.Token
	if second == "" || second == first {
		t.Fatalf("second start, the token never used: %q, want a new one", second)
	}
	if code := get(h2, first); code != 401 {
		t.Fatalf("the replaced token: %d, want 401", code)
	}
	if code := get(h2, second); code != 200 {
		t.Fatalf("the new token: %d, want 200", code)
	}
	h2.Stop()
	h3 := servertest.Start(t, "", servertest.Options{Data: data})
	if h3.Token != "" {
		t.Fatalf("third start, the token used: a new one %q was issued", h3.Token)
	}
	if code := get(h3, second); code != 200 {
		t.Fatalf("the token in use after a restart: %d, want 200", code)
	}
}
