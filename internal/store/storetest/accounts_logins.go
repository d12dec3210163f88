package storetest

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
)

// Accounts: sign-in limits per account and per address, under load.

func testLoginLimit(t *testing.T, e *accountsEnv) {
	e.add(t, "fay@example.com", accounts.Viewer, "a")
	const ip = "198.51.100.7"
	// An unknown e-mail and a wrong password get the same answer.
	_, errUnknown := e.svc.Login(e.ctx, "nobody@example.com", password, "203.0.113.1")
	_, errWrong := e.svc.Login(e.ctx, "fay@example.com", "wrong password", "203.0.113.1")
	if !errors.Is(errUnknown, accounts.ErrBadCredentials) || errUnknown.Error() != errWrong.Error() {
		t.Fatalf("unknown e-mail %q, wrong password %q: want the same ErrBadCredentials", errUnknown, errWrong)
	}
	// Five failures of one pair in a row at any pace; then each attempt
	// waits twice as long after the one before: 1s, 2s, 4s…
	for i := range 5 {
		if _, err := e.svc.Login(e.ctx, "fay@example.com", "wrong password", ip); !errors.Is(err, accounts.ErrBadCredentials) {
			t.Fatalf("failure %d: %v", i+1, err)
		}
	}
	var locked *accounts.LockedError
	_, err := e.svc.Login(e.ctx, "fay@example.com", password, ip)
	if !errors.As(err, &locked) || !errors.Is(err, accounts.ErrLocked) || locked.RetryAfter(e.clock.Now()) != time.Second {
		t.Fatalf("6th attempt at once: %v, want locked for 1s", err)
	}
	// The refused attempt counts too: the next waits 2s after it.
	e.clock.Advance(time.Second)
	_, err = e.svc.Login(e.ctx, "fay@example.com", password, ip)
	if !errors.As(err, &locked) || locked.RetryAfter(e.clock.Now()) != time.Second {
		t.Fatalf("7th attempt 1s later: %v, want locked for 1s more", err)
	}
	e.clock.Advance(4 * time.Second)
	if _, err := e.svc.Login(e.ctx, "fay@example.com", "wrong password", ip); !errors.Is(err, accounts.ErrBadCredentials) {
		t.Fatalf("8th attempt after its wait: %v, want it checked", err)
	}
	e.clock.Advance(8 * time.Second)
	if _, err := e.svc.Login(e.ctx, "fay@example.com", password, ip); err != nil {
		t.Fatalf("9th attempt after its wait, right password: %v", err)
	}
	// A success starts the pair over.
	for range 5 {
		if _, err := e.svc.Login(e.ctx, "fay@example.com", "wrong password", ip); !errors.Is(err, accounts.ErrBadCredentials) {
			t.Fatalf("after a success: %v", err)
		}
	}
	// A pause of the window starts it over too.
	e.clock.Advance(15 * time.Minute)
	if _, err := e.svc.Login(e.ctx, "fay@example.com", password, ip); err != nil {
		t.Fatalf("after a pause: %v", err)
	}
	// Per address: a budget a success does not refill. Rounds of failures
	// on other e-mails, each followed by signing in to one's own account,
	// run it out, and then the own account waits too.
	svc := accounts.New(e.st, accounts.Config{Now: e.clock.Now, Password: fastParams, AddressAttempts: 20})
	const attacker = "192.0.2.66"
	e.add(t, "mallory@example.com", accounts.Viewer, "a")
	for round := range 2 {
		for i := range 9 {
			if _, err := svc.Login(e.ctx, fmt.Sprintf("guess%d@example.com", i), "wrong password", attacker); !errors.Is(err, accounts.ErrBadCredentials) {
				t.Fatalf("round %d failure %d: %v", round, i+1, err)
			}
		}
		if _, err := svc.Login(e.ctx, "mallory@example.com", password, attacker); err != nil {
			t.Fatalf("round %d: own sign-in: %v", round, err)
		}
	}
	if _, err := svc.Login(e.ctx, "guess0@example.com", "wrong password", attacker); !errors.Is(err, accounts.ErrLocked) {
		t.Fatalf("21st attempt from one address: %v, want ErrLocked", err)
	}
	if _, err := svc.Login(e.ctx, "mallory@example.com", password, attacker); !errors.Is(err, accounts.ErrLocked) {
		t.Fatalf("the address's own account past the budget: %v, want ErrLocked", err)
	}
	if _, err := svc.Login(e.ctx, "fay@example.com", password, "203.0.113.99"); err != nil {
		t.Fatalf("another address: %v", err)
	}
	// Failures are in the audit log, the password never.
	fails := e.audit(t, "login.failure")
	if len(fails) != 2+6+5+18 {
		t.Fatalf("%d login.failure entries, want %d", len(fails), 2+6+5+18)
	}
	for _, en := range append(fails, e.audit(t, "login")...) {
		if strings.Contains(en.Actor+en.Target+en.Detail, "wrong password") || strings.Contains(en.Actor+en.Target+en.Detail, password) {
			t.Fatalf("an audit entry holds a password: %+v", en)
		}
	}
	if n := len(e.audit(t, "login.locked")); n == 0 || n > 4 {
		t.Fatalf("%d login.locked entries, want a few", n)
	}
}

// testLoginStorm: a storm of wrong passwords for the owner from one
// address neither keeps the owner, signing in from another, out nor gets
// the attacker more than a handful of checked guesses.
func testLoginStorm(t *testing.T, e *accountsEnv) {
	e.add(t, "owner@example.com", accounts.Owner, "*")
	const attacker, owner = "192.0.2.13", "198.51.100.20"
	checked := 0
	for i := range 200 {
		_, err := e.svc.Login(e.ctx, "owner@example.com", fmt.Sprint("guess ", i), attacker)
		switch {
		case errors.Is(err, accounts.ErrBadCredentials):
			checked++
		case !errors.Is(err, accounts.ErrLocked):
			t.Fatalf("guess %d: %v", i, err)
		}
		e.clock.Advance(100 * time.Millisecond)
		if i%50 == 49 {
			if _, err := e.svc.Login(e.ctx, "owner@example.com", password, owner); err != nil {
				t.Fatalf("the owner from another address during the storm (after %d guesses): %v", i+1, err)
			}
		}
	}
	// 20 s of guesses 100 ms apart: 5 free, then the waits of 1s, 2s, 4s
	// and 8s let at most a few more through.
	if checked > 9 {
		t.Fatalf("%d of 200 guesses were checked, want at most 9", checked)
	}
	var locked *accounts.LockedError
	_, err := e.svc.Login(e.ctx, "owner@example.com", password, attacker)
	if !errors.As(err, &locked) || locked.RetryAfter(e.clock.Now()) < time.Minute {
		t.Fatalf("the attacker's pair after the storm: %v, want a long wait", err)
	}
}

// testLoginManyAddresses is issue 30's guessing: 200 guesses at one
// account from 40 addresses in 12 s were all checked, each address's
// pair staying under its own limit. The account's own count slows the
// browsers that never signed in to it once AccountAttempts (20) guesses
// were checked, so few more are; the owner's browser, which signed in
// before (its device cookie), signs in at once throughout — the lock-out
// case of testLoginStorm still holds. An owner on a browser new to the
// account waits with the guessers: the trade-off docs/security.md states.
func testLoginManyAddresses(t *testing.T, e *accountsEnv) {
	e.add(t, "owner@example.com", accounts.Owner, "*")
	// The owner signed in from their browser before the storm.
	w, _ := e.signIn(t, "owner@example.com")
	var device string
	for _, c := range w.Result().Cookies() {
		if c.Name == accounts.DeviceCookie {
			device = c.Value
		}
	}
	if device == "" {
		t.Fatal("a sign-in set no device cookie")
	}
	checked := 0
	for i := range 200 {
		ip := fmt.Sprintf("203.0.113.%d", i%40+1)
		_, err := e.svc.Login(e.ctx, "owner@example.com", fmt.Sprint("guess ", i), ip)
		switch {
		case errors.Is(err, accounts.ErrBadCredentials):
			checked++
		case !errors.Is(err, accounts.ErrLocked):
			t.Fatalf("guess %d: %v", i, err)
		}
		e.clock.Advance(60 * time.Millisecond)
		if i%20 == 19 {
			if _, err := e.svc.LoginDevice(e.ctx, "owner@example.com", password, "198.51.100.20", device); err != nil {
				t.Fatalf("the owner's browser during the storm (after %d guesses): %v", i+1, err)
			}
		}
	}
	// 20 checked, then the waits of 1s, 2s, 4s… of 12 s let a few more.
	if checked > 25 {
		t.Fatalf("%d of 200 guesses from 40 addresses were checked, want at most 25", checked)
	}
	// Another account's device cookie, or a forged one, is no pass.
	for _, d := range []string{"", "forged.cookie", device + "x"} {
		if _, err := e.svc.LoginDevice(e.ctx, "owner@example.com", password, "198.51.100.21", d); !errors.Is(err, accounts.ErrLocked) {
			t.Fatalf("a browser new to the account (device %q) during the storm: %v, want the account's wait", d, err)
		}
	}
}

// Attempts at once are all counted: no more than the limit are checked.
func testLoginConcurrent(t *testing.T, e *accountsEnv) {
	e.add(t, "gus@example.com", accounts.Viewer, "a")
	const n = 25
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.svc.Login(e.ctx, "gus@example.com", "wrong password", "203.0.113.8")
		})
	}
	wg.Wait()
	bad, locked := 0, 0
	for _, err := range errs {
		switch {
		case errors.Is(err, accounts.ErrBadCredentials):
			bad++
		case errors.Is(err, accounts.ErrLocked):
			locked++
		default:
			t.Fatalf("concurrent sign-in: %v", err)
		}
	}
	if bad != 5 || locked != n-5 {
		t.Fatalf("%d checked, %d locked; want exactly 5 checked", bad, locked)
	}
}
