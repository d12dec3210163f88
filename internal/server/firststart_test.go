package server_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/server/servertest"
	"github.com/formd/formd/internal/store/pgstore/pgtest"
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

// TestThreeInstancesIssueOneToken: three instances starting at once on
// one PostgreSQL store print one admin token and one setup link between
// them, and the printed token works on each; the others say it was
// issued already (SetupPending, no token).
func TestThreeInstancesIssueOneToken(t *testing.T) {
	t.Parallel()
	storeURL := pgtest.URL(t)
	const n = 3
	servers := make([]*server.Server, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		cfg := config.Default()
		cfg.Data, cfg.Store = t.TempDir(), storeURL
		wg.Go(func() {
			ctx := context.Background()
			log := slog.New(slog.NewTextHandler(io.Discard, nil))
			j, st, err := server.OpenDrivers(ctx, cfg, log)
			if err != nil {
				errs[i] = err
				return
			}
			servers[i], errs[i] = server.OpenWith(ctx, cfg, log, j, st)
		})
	}
	wg.Wait()
	for i, s := range servers {
		if errs[i] != nil {
			t.Fatalf("instance %d: %v", i, errs[i])
		}
		t.Cleanup(func() { s.Close() })
	}
	var tokens, codes []string
	pending := 0
	for _, s := range servers {
		if s.NewAdminToken != "" {
			tokens = append(tokens, s.NewAdminToken)
		}
		if s.SetupCode != "" {
			codes = append(codes, s.SetupCode)
		}
		if s.SetupPending {
			pending++
		}
	}
	if len(tokens) != 1 || len(codes) != 1 || pending != n-1 {
		t.Fatalf("%d tokens, %d setup links, %d instances saying one is pending; want 1, 1, %d", len(tokens), len(codes), pending, n-1)
	}
	for i, s := range servers {
		r := httptest.NewRequest("GET", "/v1/admin/forms", nil)
		r.Header.Set("Authorization", "Bearer "+tokens[0])
		if _, err := s.Accounts.Authenticate(r); err != nil {
			t.Errorf("the printed token on instance %d: %v", i, err)
		}
	}
	// The link works through any instance, once.
	if _, err := servers[n-1].Accounts.Setup(t.Context(), codes[0], "ann@example.org", "correct horse battery staple", "192.0.2.1"); err != nil {
		t.Fatalf("the printed setup link on another instance: %v", err)
	}
}
