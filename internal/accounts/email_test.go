package accounts

import (
	"errors"
	"testing"
)

func TestNormalizeEmail(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in, want string
	}{
		{"Ann@Example.COM", "ann@example.com"},
		{"  ann@example.com\t", "ann@example.com"},
		{"ａｎｎ@ｅｘａｍｐｌｅ.com", "ann@example.com"}, // full-width: NFKC
		{"ann+forms@mail.example.co.uk", "ann+forms@mail.example.co.uk"},
		{"", ""},
		{"ann", ""},
		{"ann@", ""},
		{"@example.com", ""},
		{"ann@@example.com", ""},
		{"a@b@example.com", ""},
		{"ann@localhost", ""},
		{"ann@.example.com", ""},
		{"ann@example.com.", ""},
		{"an n@example.com", ""},
		{"ann@exa\x00mple.com", ""},
		{"Ann <ann@example.com>", ""},
	}
	for _, tc := range cases {
		got, err := NormalizeEmail(tc.in)
		if tc.want == "" {
			if !errors.Is(err, ErrInvalidEmail) {
				t.Errorf("NormalizeEmail(%q) = %q, %v; want ErrInvalidEmail", tc.in, got, err)
			}
			continue
		}
		if got != tc.want || err != nil {
			t.Errorf("NormalizeEmail(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestNewToken(t *testing.T) {
	t.Parallel()
	a, ha := NewToken()
	b, _ := NewToken()
	if a == b || len(a) != len("fmd_")+43 || a[:4] != "fmd_" {
		t.Fatalf("tokens %q %q", a, b)
	}
	if string(ha) != string(HashToken(a)) || len(ha) != 32 {
		t.Fatal("the hash is not SHA-256 of the token")
	}
}
