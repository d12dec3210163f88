package main

import (
	"bytes"
	"context"
	"errors"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// TestSetupLink: formd setup-link replaces the setup link of a server
// without accounts (the old one stops working), and refuses once there
// is an account.
func TestSetupLink(t *testing.T) {
	t.Parallel()
	data := filepath.Join(t.TempDir(), "data")
	link := func() (int, string, string) {
		var out, errb bytes.Buffer
		code := run([]string{"setup-link", "--data", data, "--public", "forms.example.org"}, &out, &errb)
		return code, strings.TrimSpace(out.String()), errb.String()
	}
	codeOf := func(t *testing.T, link string) string {
		u, err := url.Parse(link)
		if err != nil || u.Host != "forms.example.org" || u.Path != "/admin/setup" {
			t.Fatalf("link %q: %v", link, err)
		}
		return u.Query().Get("code")
	}
	exit, first, _ := link()
	if exit != 0 {
		t.Fatalf("first setup-link: exit %d", exit)
	}
	exit, second, msg := link()
	if exit != 0 || second == first || !strings.Contains(msg, "the earlier setup link no longer works") {
		t.Fatalf("second setup-link: exit %d %q %q", exit, second, msg)
	}
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(data, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	svc := accounts.New(st, accounts.Config{Password: accounts.Params{Memory: 64, Time: 1, Threads: 1}})
	if _, err := svc.Setup(context.Background(), codeOf(t, first), "ann@example.org", "correct horse battery", ""); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("the replaced link: %v, want ErrSetupCode", err)
	}
	if _, err := svc.Setup(context.Background(), codeOf(t, second), "ann@example.org", "correct horse battery", ""); err != nil {
		t.Fatalf("the new link: %v", err)
	}
	st.Close()
	if exit, _, msg := link(); exit != 1 || !strings.Contains(msg, "has an account already") {
		t.Fatalf("setup-link with an account: exit %d %q", exit, msg)
	}
}
