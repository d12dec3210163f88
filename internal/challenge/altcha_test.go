package challenge

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func TestVerifyBadInput(t *testing.T) {
	t.Parallel()
	s := NewSignerKey("k")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	c := s.Issue("f", 2000, now.Add(DefaultTTL))
	good, ok := Solve(c)
	if !ok {
		t.Fatal("not solved")
	}
	if sol, err := s.Verify(Encode(good), "f", now); err != nil || sol.Signature != c.Signature {
		t.Fatalf("good solution: %+v, %v", sol, err)
	}
	mod := func(f func(*Payload)) string {
		p := good
		f(&p)
		return Encode(p)
	}
	unsigned := s.issue("abc&", 1, 10) // a salt without params, signed
	pUnsigned, _ := Solve(unsigned)
	resigned := s.issue(strings.Replace(c.Salt, "form=f", "form=g", 1), good.Number, 2000)
	pOther, _ := Solve(resigned)
	for _, tc := range []struct {
		name, enc string
		want      error
	}{
		{"empty", "", ErrMalformed},
		{"not base64", "%%%", ErrMalformed},
		{"not json", base64.StdEncoding.EncodeToString([]byte("nope")), ErrMalformed},
		{"too long", strings.Repeat("A", maxPayload+4), ErrMalformed},
		{"other algorithm", mod(func(p *Payload) { p.Algorithm = "SHA-1" }), ErrMalformed},
		{"negative number", mod(func(p *Payload) { p.Number = -1 }), ErrMalformed},
		{"short signature", mod(func(p *Payload) { p.Signature = "ab" }), ErrMalformed},
		{"signature of another challenge", mod(func(p *Payload) { p.Signature = strings.Repeat("0", 64) }), ErrForged},
		{"salt edited to another form", mod(func(p *Payload) { p.Salt = strings.Replace(p.Salt, "form=f", "form=g", 1) }), ErrWrongSolution},
		{"salt without params", Encode(pUnsigned), ErrMalformed},
		{"issued for another form", Encode(pOther), ErrWrongForm},
		{"wrong number", mod(func(p *Payload) { p.Number++ }), ErrWrongSolution},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Verify(tc.enc, "f", now); err != tc.want {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
			if Reason(tc.want) == "" {
				t.Fatalf("no reason for %v", tc.want)
			}
		})
	}
	if _, err := s.Verify(Encode(good), "f", now.Add(DefaultTTL)); err != ErrExpired {
		t.Fatalf("at expiry: %v", err)
	}
}

// The issued number is uniform below maxnumber, and the salt carries the
// form and the expiry in altcha-lib's layout.
func TestIssue(t *testing.T) {
	t.Parallel()
	s := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	exp := time.Unix(1893553445, 0)
	c := s.Issue("spring-fair", 10, exp)
	if !strings.HasSuffix(c.Salt, "?expires=1893553445&form=spring-fair&") || c.MaxNumber != 10 || c.Algorithm != "SHA-256" {
		t.Fatalf("challenge %+v", c)
	}
	seen := map[int64]bool{}
	for range 400 {
		p, ok := Solve(s.Issue("f", 10, exp))
		if !ok || p.Number < 0 || p.Number > 10 {
			t.Fatalf("number %d, solved %v", p.Number, ok)
		}
		seen[p.Number] = true
	}
	if len(seen) != 11 {
		t.Fatalf("numbers seen: %v, want each of 0..10", seen)
	}
}

func BenchmarkVerify(b *testing.B) {
	s := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	now := time.Now()
	p, _ := Solve(s.Issue("spring-fair", 1000, now.Add(DefaultTTL)))
	enc := Encode(p)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Verify(enc, "spring-fair", now); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkIssue(b *testing.B) {
	s := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	exp := time.Now().Add(DefaultTTL)
	b.ReportAllocs()
	for b.Loop() {
		s.Issue("spring-fair", 50_000, exp)
	}
}

// Verify reads untrusted bytes: it never panics, and accepts only what
// this signer issued for the form.
func FuzzVerify(f *testing.F) {
	s := NewSignerKey("k")
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	good, _ := Solve(s.Issue("f", 50, now.Add(time.Minute)))
	f.Add(Encode(good))
	f.Add("e30=")
	f.Add("")
	f.Fuzz(func(t *testing.T, enc string) {
		sol, err := s.Verify(enc, "f", now)
		if err == nil {
			p, derr := Decode(enc)
			if derr != nil || hashHex(p.Salt, p.Number) != p.Challenge || s.sign(p.Challenge) != sol.Signature {
				t.Fatalf("accepted %q", enc)
			}
		} else if Reason(err) == "" {
			t.Fatalf("an error without a reason: %v", err)
		}
	})
}

// The baseline for BenchmarkVerify, measured in the same run: one
// HMAC-SHA-256 of a fingerprint-sized input, as form.Hasher computes for
// every submission already.
func BenchmarkBaselineHMAC(b *testing.B) {
	s := NewSigner([]byte("0123456789abcdef0123456789abcdef"))
	in := strings.Repeat("a", 64)
	b.ReportAllocs()
	for b.Loop() {
		s.sign(in)
	}
}
