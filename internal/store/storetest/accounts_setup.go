package storetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/store"
)

// Accounts: the first-run setup code and its budget.

func testSetupCode(t *testing.T, e *accountsEnv) {
	first, state, err := e.svc.SetupCode(e.ctx, false)
	if err != nil || state != accounts.SetupIssued || len(first) < 32 {
		t.Fatalf("setup code %q %v %v", first, state, err)
	}
	// Another instance, or a restart, while it is live: nothing new, and
	// the first link still works.
	if code, state, err := e.svc.SetupCode(e.ctx, false); code != "" || state != accounts.SetupPending || err != nil {
		t.Fatalf("second start: %q %v %v, want SetupPending", code, state, err)
	}
	// formd setup-link replaces it.
	code, state, err := e.svc.SetupCode(e.ctx, true)
	if err != nil || state != accounts.SetupIssued {
		t.Fatal(state, err)
	}
	if _, err := e.svc.Setup(e.ctx, first, "ida@example.com", password, ""); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("replaced code: %v, want ErrSetupCode", err)
	}
	if _, err := e.svc.Setup(e.ctx, "not the code", "ida@example.com", "short", ""); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("a wrong code is refused before the password is looked at: %v", err)
	}
	if _, err := e.svc.Setup(e.ctx, code, "ida@example.com", "short", ""); !errors.Is(err, accounts.ErrPasswordTooShort) {
		t.Fatalf("short password: %v", err)
	}
	// Used at once by many: one account, the rest refused.
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.svc.Setup(e.ctx, code, fmt.Sprintf("owner%d@example.com", i), password, "")
		})
	}
	wg.Wait()
	ok2 := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok2++
		case !(errors.Is(err, accounts.ErrSetupCode) || errors.Is(err, accounts.ErrSetupDone)) || errors.Is(err, store.ErrUnavailable):
			t.Fatalf("concurrent setup: %v, want ErrSetupCode or ErrSetupDone", err)
		}
	}
	all, err := e.st.ListAccounts(e.ctx)
	if ok2 != 1 || err != nil || len(all) != 1 || all[0].Role != accounts.Owner || !slices.Equal(all[0].Sites, []string{"*"}) {
		t.Fatalf("%d setups succeeded, accounts %+v %v: want one owner of every site", ok2, all, err)
	}
	if _, err := e.svc.Login(e.ctx, all[0].Email, password, "192.0.2.1"); err != nil {
		t.Fatalf("sign in as the first owner: %v", err)
	}
	// With an account, no new code is made.
	if code, state, err := e.svc.SetupCode(e.ctx, true); state != accounts.SetupNotNeeded || code != "" || err != nil {
		t.Fatalf("setup code with an account: %q %v %v", code, state, err)
	}
}

func testSetupDone(t *testing.T, e *accountsEnv) {
	code, state, err := e.svc.SetupCode(e.ctx, false)
	if err != nil || state != accounts.SetupIssued {
		t.Fatal(state, err)
	}
	e.clock.Advance(24*time.Hour + time.Second)
	if _, err := e.svc.Setup(e.ctx, code, "jo@example.com", password, ""); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("expired code: %v, want ErrSetupCode", err)
	}
	// An expired code is replaced at the next start.
	code, state, err = e.svc.SetupCode(e.ctx, false)
	if err != nil || state != accounts.SetupIssued {
		t.Fatal(state, err)
	}
	// formd users add made an account meanwhile.
	e.add(t, "kim@example.com", accounts.Owner, "*")
	if _, err := e.svc.Setup(e.ctx, code, "jo@example.com", password, ""); !errors.Is(err, accounts.ErrSetupDone) || errors.Is(err, store.ErrUnavailable) {
		t.Fatalf("setup with an account: %v, want ErrSetupDone", err)
	}
	if _, err := e.st.AccountByEmail(e.ctx, "jo@example.com"); !errors.Is(err, accounts.ErrNotFound) {
		t.Fatalf("the refused setup made an account: %v", err)
	}
}

// The setup page's posts are budgeted per address, and a wrong code never
// reaches the password check.
func testSetupBudget(t *testing.T, e *accountsEnv) {
	if _, _, err := e.svc.SetupCode(e.ctx, false); err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.5"); !errors.Is(err, accounts.ErrSetupCode) {
			t.Fatalf("bogus post %d: %v", i+1, err)
		}
	}
	var locked *accounts.LockedError
	if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.5"); !errors.As(err, &locked) {
		t.Fatalf("11th post from one address: %v, want locked", err)
	}
	if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.6"); !errors.Is(err, accounts.ErrSetupCode) {
		t.Fatalf("another address: %v", err)
	}
	e.add(t, "zed@example.com", accounts.Owner, "*")
	if _, err := e.svc.Setup(e.ctx, "bogus", "yan@example.com", password, "192.0.2.6"); !errors.Is(err, accounts.ErrSetupDone) {
		t.Fatalf("once set up: %v, want ErrSetupDone", err)
	}
}
