package accounts

import (
	"errors"
	"strings"
	"testing"
	"time"
)

var testParams = Params{Memory: 64, Time: 1, Threads: 1}

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	phc, err := HashPassword("correct horse battery", testParams)
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" || parts[2] != "v=19" || parts[3] != "m=64,t=1,p=1" || len(parts[4]) != 22 || len(parts[5]) != 43 {
		t.Fatalf("PHC string %q", phc)
	}
	if again, _ := HashPassword("correct horse battery", testParams); again == phc {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	cases := []struct {
		password string
		want     bool
	}{
		{"correct horse battery", true},
		{"correct horse batterY", false},
		{"", false},
		{"ｃｏｒｒｅｃｔ horse battery", true}, // full-width letters: the same after NFKC
		{strings.Repeat("x", MaxPasswordLength+1), false},
	}
	for _, tc := range cases {
		if ok, err := VerifyPassword(phc, tc.password); ok != tc.want || err != nil {
			t.Errorf("verify %q: %v %v, want %v", tc.password, ok, err, tc.want)
		}
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaA", "$argon2id$v=18$m=64,t=1,p=1$c2FsdHNhbHQ$aGFzaA",
		"$argon2id$v=19$m=0,t=1,p=1$c2FsdHNhbHQ$aGFzaA", "$argon2id$v=19$m=64,t=1,p=1$!!$aGFzaA", "$argon2id$v=19$m=64,t=1,p=1$c2FsdHNhbHQ$"} {
		if ok, err := VerifyPassword(bad, "correct horse battery"); ok || err == nil {
			t.Errorf("verify against %q: %v %v, want an error", bad, ok, err)
		}
	}
}

func TestNeedsRehash(t *testing.T) {
	t.Parallel()
	phc, err := HashPassword("correct horse battery", testParams)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p    Params
		want bool
	}{
		{testParams, false},
		{Params{Memory: 128, Time: 1, Threads: 1}, true},
		{Params{Memory: 64, Time: 2, Threads: 1}, true},
		{Params{Memory: 64, Time: 1, Threads: 2}, true},
	} {
		if got := NeedsRehash(phc, tc.p); got != tc.want {
			t.Errorf("NeedsRehash for %+v: %v, want %v", tc.p, got, tc.want)
		}
	}
	if !NeedsRehash("not a hash", testParams) {
		t.Error("an unreadable hash must be replaced")
	}
}

func TestCheckPassword(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		password string
		want     error
	}{
		{"12345678901", ErrPasswordTooShort},
		{"123456789012", nil},
		{"短い日本語のパスワードだ", nil}, // 12 characters, more bytes
		{"短い日本語のパスワード", ErrPasswordTooShort},
		{strings.Repeat("x", MaxPasswordLength+1), ErrPasswordTooLong},
	} {
		if err := CheckPassword(tc.password); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
			t.Errorf("CheckPassword(%q): %v, want %v", tc.password, err, tc.want)
		}
	}
	if !strings.Contains(ErrPasswordTooShort.Error(), "at least 12 characters") {
		t.Errorf("the message %q does not say the rule", ErrPasswordTooShort)
	}
}

// The default parameters stay a slow KDF: a hash takes real time.
func TestDefaultParamsAreSlow(t *testing.T) {
	if testing.Short() {
		t.Skip("hashes with 64 MiB")
	}
	start := time.Now()
	phc, err := HashPassword("correct horse battery", DefaultParams)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=65536,t=1,p=2$") {
		t.Fatalf("default PHC %q", phc)
	}
	t.Logf("one argon2id hash with %+v: %v", DefaultParams, time.Since(start))
}

// BenchmarkHashPassword measures one hash with the default parameters: the
// cost of a sign-in, and what DefaultParams documents.
func BenchmarkHashPassword(b *testing.B) {
	for b.Loop() {
		if _, err := HashPassword("correct horse battery", DefaultParams); err != nil {
			b.Fatal(err)
		}
	}
}
