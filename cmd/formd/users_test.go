package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/store/sqlitestore"
)

// Each users subcommand against a fresh --data, with its errors naming the
// flag and the fix. Not parallel: it replaces the terminal.
func TestUsers(t *testing.T) {
	data := filepath.Join(t.TempDir(), "data")
	saved := terminal
	t.Cleanup(func() { terminal = saved })
	var tokenID, token string
	cases := []struct {
		name      string
		args      []string
		stdin     string
		tty       []string // passwords typed at a terminal; nil: stdin is not a terminal
		code      int
		want      string
		dontWant  string
		afterward func(t *testing.T, stdout, stderr string)
	}{
		{name: "no subcommand", args: nil, code: 2, want: "usage: formd users add"},
		{name: "unknown subcommand", args: []string{"remove"}, code: 2, want: "usage: formd users add"},
		{name: "add without e-mail", args: []string{"add", "--role", "owner"}, code: 2, want: "--email is required, such as --email ann@example.com"},
		{name: "add without role", args: []string{"add", "--email", "ann@example.com"}, code: 2, want: "--role is required, such as --role owner"},
		{name: "add with a bad role", args: []string{"add", "--email", "ann@example.com", "--role", "admin"}, code: 2, want: `--role: not a role: "admin"; use owner, editor or viewer`},
		{name: "add with a bad e-mail", args: []string{"add", "--email", "ann", "--role", "owner"}, code: 2, want: "--email: not an e-mail address"},
		{name: "add, not a terminal", args: []string{"add", "--email", "ann@example.com", "--role", "owner"}, code: 2, want: "add --password-stdin"},
		{name: "add, short password", args: []string{"add", "--email", "ann@example.com", "--role", "owner", "--password-stdin"}, stdin: "short\n", code: 2, want: "at least 12 characters"},
		{name: "add, empty stdin", args: []string{"add", "--email", "ann@example.com", "--role", "owner", "--password-stdin"}, code: 2, want: "stdin is empty"},
		{name: "add an owner", args: []string{"add", "--data", data, "--email", "Ann@Example.com", "--role", "owner", "--password-stdin"}, stdin: "correct horse battery\n", code: 0, want: "added ann@example.com: owner of *"},
		{name: "add the e-mail again", args: []string{"add", "--data", data, "--email", "ann@example.com", "--role", "viewer", "--password-stdin"}, stdin: "correct horse battery\n", code: 1, want: "already exists; formd users list shows it"},
		{name: "add with a blank site", args: []string{"add", "--data", data, "--email", "bo@example.com", "--role", "viewer", "--sites", "shop,,blog", "--password-stdin"}, stdin: "correct horse battery\n", code: 2, want: "--sites:"},
		{name: "terminal, passwords differ", args: []string{"add", "--data", data, "--email", "bo@example.com", "--role", "editor"}, tty: []string{"correct horse battery", "correct horse batterx"}, code: 2, want: "the two passwords differ"},
		{name: "terminal", args: []string{"add", "--data", data, "--email", "bo@example.com", "--role", "editor", "--sites", "shop,blog", "--name", "Bo"}, tty: []string{"correct horse battery", "correct horse battery"}, code: 0, want: "added bo@example.com: editor of blog,shop", dontWant: "correct horse"},
		{name: "token without name", args: []string{"token", "--data", data, "--email", "bo@example.com"}, code: 2, want: "--name is required, such as --name zapier"},
		{name: "token for nobody", args: []string{"token", "--data", data, "--email", "cy@example.com", "--name", "ci"}, code: 1, want: "--email: no account has the e-mail cy@example.com"},
		{name: "token", args: []string{"token", "--data", data, "--email", "bo@example.com", "--name", "ci"}, code: 0, want: "it is shown once",
			afterward: func(t *testing.T, stdout, stderr string) {
				token = strings.TrimSpace(stdout)
				m := regexp.MustCompile(`revoke-token --id (tok_\w+)`).FindStringSubmatch(stderr)
				if !strings.HasPrefix(token, "fmd_") || m == nil {
					t.Fatalf("token output %q, %q", stdout, stderr)
				}
				tokenID = m[1]
				if p := authenticate(t, data, token); p == nil || p.Email != "bo@example.com" || p.Role != accounts.Editor {
					t.Fatalf("the new token authenticates as %+v", p)
				}
			}},
		{name: "list", args: []string{"list", "--data", data}, code: 0, want: "bo@example.com Bo editor blog,shop active",
			afterward: func(t *testing.T, stdout, _ string) {
				for _, w := range []string{"ann@example.com - owner * active", tokenID + " bo@example.com ci"} {
					if !strings.Contains(squash(stdout), w) {
						t.Errorf("list lacks %q:\n%s", w, stdout)
					}
				}
				if strings.Contains(stdout, token) || strings.Contains(stdout, "argon2") {
					t.Errorf("list shows a secret:\n%s", stdout)
				}
			}},
		{name: "revoke an unknown token", args: []string{"revoke-token", "--data", data, "--id", "tok_nothing"}, code: 1, want: "--id: no token has the id tok_nothing"},
		{name: "revoke without id", args: []string{"revoke-token", "--data", data}, code: 2, want: "--id is required"},
		{name: "revoke", args: []string{"revoke-token", "--data", data, "--id", "TOKEN_ID"}, code: 0, want: "revoked tok_",
			afterward: func(t *testing.T, _, _ string) {
				if p := authenticate(t, data, token); p != nil {
					t.Fatalf("a revoked token authenticates as %+v", p)
				}
			}},
		{name: "passwd without e-mail", args: []string{"passwd", "--data", data}, code: 2, want: "--email is required"},
		{name: "passwd, short", args: []string{"passwd", "--data", data, "--email", "ann@example.com", "--password-stdin"}, stdin: "short\n", code: 2, want: "at least 12 characters"},
		{name: "passwd for nobody", args: []string{"passwd", "--data", data, "--email", "cy@example.com", "--password-stdin"}, stdin: "a forgotten owner's new one\n", code: 1, want: "no account has the e-mail cy@example.com"},
		{name: "passwd", args: []string{"passwd", "--data", data, "--email", "Ann@example.com", "--password-stdin"}, stdin: "a forgotten owner's new one\n", code: 0, want: "set the password of ann@example.com",
			afterward: func(t *testing.T, _, _ string) {
				st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(data, "store.db")})
				if err != nil {
					t.Fatal(err)
				}
				defer st.Close()
				svc := accounts.New(st, accounts.Config{})
				if _, err := svc.Login(context.Background(), "ann@example.com", "a forgotten owner's new one", "192.0.2.1"); err != nil {
					t.Fatalf("sign in with the password formd users passwd set: %v", err)
				}
				if _, err := svc.Login(context.Background(), "ann@example.com", "correct horse battery", "192.0.2.1"); !errors.Is(err, accounts.ErrBadCredentials) {
					t.Fatalf("the old password: %v", err)
				}
			}},
		{name: "disable nobody", args: []string{"disable", "--data", data, "--email", "cy@example.com"}, code: 1, want: "no account has the e-mail cy@example.com"},
		{name: "disable", args: []string{"disable", "--data", data, "--email", "BO@example.com"}, code: 0, want: "disabled bo@example.com"},
		{name: "list shows disabled", args: []string{"list", "--data", data}, code: 0, want: "disabled"},
		{name: "bad store", args: []string{"list", "--store", "mysql://x"}, code: 2, want: "use sqlite or a postgres:// URL"},
		{name: "stray argument", args: []string{"list", "--data", data, "extra"}, code: 2, want: `unexpected argument "extra"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			terminal.stdin = strings.NewReader(tc.stdin)
			typed := tc.tty
			terminal.isTerminal = func() bool { return tc.tty != nil }
			terminal.readPassword = func() ([]byte, error) {
				if len(typed) == 0 {
					return nil, io.EOF
				}
				p := typed[0]
				typed = typed[1:]
				return []byte(p), nil
			}
			args := append([]string{"users"}, tc.args...)
			for i, a := range args {
				if a == "TOKEN_ID" {
					args[i] = tokenID
				}
			}
			var out, errb bytes.Buffer
			code := run(args, &out, &errb)
			got := out.String() + errb.String()
			if code != tc.code || !strings.Contains(squash(got), tc.want) || (tc.dontWant != "" && strings.Contains(got, tc.dontWant)) {
				t.Fatalf("formd %s: exit %d, output %q; want exit %d and %q", strings.Join(args, " "), code, got, tc.code, tc.want)
			}
			if tc.afterward != nil {
				tc.afterward(t, out.String(), errb.String())
			}
		})
	}
}

// squash makes runs of spaces one, so that tables compare by their cells.
func squash(s string) string { return regexp.MustCompile(` {2,}`).ReplaceAllString(s, " ") }

// authenticate says whom a bearer token proves, nil for no one.
func authenticate(t *testing.T, data, token string) *accounts.Principal {
	t.Helper()
	st, err := sqlitestore.Open(context.Background(), sqlitestore.Options{Path: filepath.Join(data, "store.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	r := httptest.NewRequest("GET", "/v1/admin/forms", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	p, err := accounts.New(st, accounts.Config{}).Authenticate(r)
	if errors.Is(err, accounts.ErrUnauthenticated) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return &p
}
