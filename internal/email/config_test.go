package email

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	good := []struct {
		raw  string
		want Config
	}{
		{"smtp://mail.example.org", Config{Host: "mail.example.org", Port: 587}},
		{"smtp://mail.example.org:25", Config{Host: "mail.example.org", Port: 25}},
		{"SMTP://mail.example.org:2525/", Config{Host: "mail.example.org", Port: 2525}},
		{"smtps://mail.example.org", Config{Host: "mail.example.org", Port: 465, ImplicitTLS: true}},
		{"smtps://u:p@host", Config{Host: "host", Port: 465, ImplicitTLS: true, Username: "u", Password: "p"}},
		{"smtp://u%40example.org:p%3Aw%2Fd%40@mail.example.org:587", Config{Host: "mail.example.org", Port: 587, Username: "u@example.org", Password: "p:w/d@"}},
		{"smtp://[::1]:2525", Config{Host: "::1", Port: 2525}},
		{"  smtp://127.0.0.1:1025\n", Config{Host: "127.0.0.1", Port: 1025}},
	}
	for _, tc := range good {
		t.Run(tc.raw, func(t *testing.T) {
			got, err := ParseURL(tc.raw)
			if err != nil {
				t.Fatalf("ParseURL(%q): %v", tc.raw, err)
			}
			if got != tc.want {
				t.Fatalf("ParseURL(%q) = %#v, want %#v", tc.raw, got, tc.want)
			}
		})
	}

	bad := []struct {
		raw  string
		says string // a fragment of the reason
	}{
		{"", "is empty"},
		{"http://x", `scheme "http"`},
		{"mail.example.org:587", "no scheme"},
		{"user:secret@mail.example.org", "no scheme"},
		{"smtp://", "names no host"},
		{"smtp://:587", "names no host"},
		{"smtp:mail.example.org", "smtp://"},
		{"smtp://host:abc", "port"},
		{"smtp://host:0", `port "0"`},
		{"smtp://host:65536", `port "65536"`},
		{"smtp://host:", `port ""`},
		{"smtp://host/path", "path"},
		{"smtp://host?tls=1", "query"},
		{"smtp://:secret@host", "no user name"},
		{"smtp://user@host", "no password"},
		{"smtp://user:secret%zz@host", "not a URL"},
		{"smtps://user:secret@host:99999", "port"},
		{"smtps://user:sec/ret@host", "not a URL"},
		{"ftp://user:secret@host", `scheme "ftp"`},
	}
	for _, tc := range bad {
		t.Run(tc.raw, func(t *testing.T) {
			_, err := ParseURL(tc.raw)
			if err == nil {
				t.Fatalf("ParseURL(%q) = nil error", tc.raw)
			}
			msg := err.Error()
			for _, want := range []string{"--smtp", "FORMD_SMTP", tc.says, "smtp://user:password@mail.example.org:587"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q lacks %q", msg, want)
				}
			}
			if strings.Contains(msg, "secret") || strings.Contains(msg, "sec/ret") {
				t.Errorf("error %q repeats the password", msg)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("error %v is not ErrInvalidSetting", err)
			}
		})
	}
}

func TestConfigRedacted(t *testing.T) {
	t.Parallel()
	cfg, err := ParseURL("smtps://me%40example.org:hunter2@mail.example.org")
	if err != nil {
		t.Fatal(err)
	}
	const want = "smtps://me%40example.org:xxxxx@mail.example.org:465"
	if got := cfg.Redacted(); got != want {
		t.Errorf("Redacted() = %q, want %q", got, want)
	}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("start", "smtp", cfg)
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), logged.String()} {
		if strings.Contains(s, "hunter2") {
			t.Errorf("printed config %q shows the password", s)
		}
	}
	if got := (Config{Host: "::1", Port: 25}).Redacted(); got != "smtp://[::1]:25" {
		t.Errorf("Redacted() = %q", got)
	}
}

func TestParseFrom(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, name, addr string
	}{
		{"formd@example.org", "", "formd@example.org"},
		{"Spring fair <formd@example.org>", "Spring fair", "formd@example.org"},
		{`"Fair, 2027" <formd@example.org>`, "Fair, 2027", "formd@example.org"},
		{"春季集市 <formd@example.org>", "春季集市", "formd@example.org"},
	} {
		a, err := ParseFrom(tc.in)
		if err != nil {
			t.Errorf("ParseFrom(%q): %v", tc.in, err)
			continue
		}
		if a.Name != tc.name || a.Address != tc.addr {
			t.Errorf("ParseFrom(%q) = %q <%s>", tc.in, a.Name, a.Address)
		}
	}
	for _, in := range []string{"", "formd", "a@example.org, b@example.org", "formd@example.org\r\nBcc: x@example.org"} {
		_, err := ParseFrom(in)
		if err == nil || !errors.Is(err, ErrInvalidSetting) || !strings.Contains(err.Error(), "--smtp-from") || !strings.Contains(err.Error(), "formd@example.org") {
			t.Errorf("ParseFrom(%q) = %v, want an error naming --smtp-from with an example", in, err)
		}
	}
}
