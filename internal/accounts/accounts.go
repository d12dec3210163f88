// Package accounts is who may use the owner's console and admin API:
// accounts with a password and a role over some sites, their API tokens,
// browser sessions with CSRF protection, the one-time setup link of a new
// server, and the audit log of who did what.
//
// Permission checks live in one place, Principal.Can. Every operation here
// that changes an account, a token or a session records itself in the
// audit log, in the same store transaction as the change. Uniqueness (one
// account per e-mail, one use of a setup code) is decided by the store's
// unique indexes and guarded statements, never by reading first.
//
// The store is the consumer-owned Store interface, implemented by the
// sqlitestore and pgstore drivers and checked by storetest.RunAccounts.
package accounts

import (
	"context"
	"fmt"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"
)

// Config are the settings of accounts and sessions. Zero fields take the
// defaults documented on each.
type Config struct {
	// IdleTimeout ends a session not used for this long. Default 12h.
	IdleTimeout time.Duration
	// SessionMaxAge ends a session this long after sign-in, however much
	// it is used. Default 7 days.
	SessionMaxAge time.Duration
	// SecureCookies marks the session cookie Secure even when the request
	// did not come over TLS to this server (TLS ends at a proxy in front).
	// Requests over TLS always get Secure cookies. Default false.
	SecureCookies bool
	// IsHTTPS says whether a request reached formd over HTTPS, also when
	// TLS ended at a trusted proxy in front (X-Forwarded-Proto: https);
	// such requests get Secure cookies. Default: only r.TLS counts.
	IsHTTPS func(r *http.Request) bool
	// MaxLoginAttempts is how many sign-ins for one e-mail from one
	// address may come in a row, at any pace; each further one must wait
	// after the one before it twice as long as the last wait (1s, 2s, 4s…,
	// at most LoginWindow), or it is refused unchecked. Only that pair is
	// slowed: the account's owner signing in from another address is not.
	// A successful sign-in, or a pause of LoginWindow, starts over.
	// Default 5.
	MaxLoginAttempts int
	// AddressAttempts is how many sign-ins one address may try, for any
	// e-mails, before it must pause for LoginWindow; a success does not
	// start it over, so signing in to one's own account between guesses
	// buys nothing. Default 100.
	AddressAttempts int
	// AccountAttempts is how many checked sign-ins of one account, from
	// browsers that have not signed in to it before, may come within
	// LoginWindow from all addresses together; each further one must
	// wait as MaxLoginAttempts' do, or it is refused unchecked. A browser
	// that signed in to the account before (its device cookie, OWASP's
	// "device cookies") is not slowed, so guesses from many addresses
	// cannot add up to lock the owner out. Default 20.
	AccountAttempts int
	// DeviceKey signs the device cookies; every instance must have the
	// same (the server derives it from the installation's secret). A
	// random key of this process when nil.
	DeviceKey []byte
	// HashSlots is how many password hashes (argon2id, Password.Memory
	// each) may run at once, server-wide; the rest wait at most HashWait.
	// Default 2 (1 on one core): a burst of sign-ins then holds 2 × 64
	// MiB of hashes at once, and the Go heap grows by less than 512 MiB
	// (TestHashingMemoryBound measures it).
	HashSlots int
	// SetupAttempts is how many posts of the setup page (or of a reset
	// link's page) one address may make before it must pause for
	// LoginWindow. Default 10.
	SetupAttempts int
	// LoginWindow is the pause that starts the counts over, and the
	// longest wait between two slowed sign-ins. Default 15m.
	LoginWindow time.Duration
	// HashWait is how long a password check waits for a free hashing slot
	// (one per core, each taking Password.Memory) before the answer is
	// ErrBusy (503 with Retry-After). Default 5s.
	HashWait time.Duration
	// ResetValid is how long a password reset link works. Default 4h.
	ResetValid time.Duration
	// SetupValid is how long a setup link works. Default 24h.
	SetupValid time.Duration
	// Password are the argon2id parameters of new hashes; a stored hash
	// with other parameters is replaced at the next sign-in. Default
	// DefaultParams.
	Password Params
	// PasswordsOff switches password sign-in off (single sign-on only),
	// except for BreakGlass: the e-mail (normalized) of the one owner
	// who may still sign in with a password when the identity provider
	// is down or misconfigured. Default false: passwords work.
	PasswordsOff bool
	BreakGlass   string
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	if c.IdleTimeout <= 0 {
		c.IdleTimeout = 12 * time.Hour
	}
	if c.SessionMaxAge <= 0 {
		c.SessionMaxAge = 7 * 24 * time.Hour
	}
	if c.MaxLoginAttempts <= 0 {
		c.MaxLoginAttempts = 5
	}
	if c.AddressAttempts <= 0 {
		c.AddressAttempts = 100
	}
	if c.AccountAttempts <= 0 {
		c.AccountAttempts = 20
	}
	if c.HashSlots <= 0 {
		c.HashSlots = min(runtime.NumCPU(), 2)
	}
	if len(c.DeviceKey) == 0 {
		c.DeviceKey = []byte(randomString(32))
	}
	if c.SetupAttempts <= 0 {
		c.SetupAttempts = 10
	}
	if c.HashWait <= 0 {
		c.HashWait = 5 * time.Second
	}
	if c.ResetValid <= 0 {
		c.ResetValid = 4 * time.Hour
	}
	if c.LoginWindow <= 0 {
		c.LoginWindow = 15 * time.Minute
	}
	if c.SetupValid <= 0 {
		c.SetupValid = 24 * time.Hour
	}
	if c.Password == (Params{}) {
		c.Password = DefaultParams
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// touchEvery is how stale a token's last use or a session's last sight may
// get before it is written again: reads stay reads most of the time.
const touchEvery = time.Minute

// Service is the accounts API on top of a Store.
type Service struct {
	st  Store
	cfg Config
	// hashing admits Config.HashSlots argon2id hashes at a time,
	// server-wide: each takes Params.Memory, so a burst of sign-ins waits
	// (at most Config.HashWait, then ErrBusy) instead of exhausting
	// memory.
	hashing chan struct{}
	// dummy is a hash to check passwords of unknown e-mails against, so
	// they take as long as known ones.
	dummy     string
	dummyOnce sync.Once
}

// New makes the service.
func New(st Store, cfg Config) *Service {
	cfg = cfg.withDefaults()
	return &Service{st: st, cfg: cfg, hashing: make(chan struct{}, cfg.HashSlots)}
}

// Config is the configuration in use, defaults filled.
func (s *Service) Config() Config { return s.cfg }

func (s *Service) now() time.Time { return s.cfg.Now() }

// hash hashes a new password, waiting for a free core.
func (s *Service) hash(ctx context.Context, password string) (string, error) {
	if err := CheckPassword(password); err != nil {
		return "", err
	}
	release, err := s.acquire(ctx)
	if err != nil {
		return "", err
	}
	defer release()
	return HashPassword(password, s.cfg.Password)
}

// verify checks a password against a stored hash, waiting for a free
// core; an empty hash is checked against a dummy so that it takes as long
// and never matches.
func (s *Service) verify(ctx context.Context, phc, password string) (bool, error) {
	match := phc != ""
	if !match {
		s.dummyOnce.Do(func() {
			s.dummy, _ = HashPassword(randomString(16), s.cfg.Password)
		})
		phc = s.dummy
	}
	release, err := s.acquire(ctx)
	if err != nil {
		return false, err
	}
	defer release()
	ok, err := VerifyPassword(phc, password)
	return ok && match, err
}

// acquire takes a hashing slot, waiting at most Config.HashWait.
func (s *Service) acquire(ctx context.Context) (func(), error) {
	release := func() { <-s.hashing }
	select {
	case s.hashing <- struct{}{}:
		return release, nil
	default:
	}
	wait := time.NewTimer(s.cfg.HashWait)
	defer wait.Stop()
	select {
	case s.hashing <- struct{}{}:
		return release, nil
	case <-wait.C:
		return nil, ErrBusy
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// normalizeSites checks a site list: trimmed, no blanks, sorted, without
// repeats; AllSites alone when it is among them.
func normalizeSites(sites []string) ([]string, error) {
	var out []string
	for _, s := range sites {
		s = strings.TrimSpace(s)
		if s == "" {
			return nil, fmt.Errorf("%w: a site id is blank", ErrInvalidSites)
		}
		if s == AllSites {
			return []string{AllSites}, nil
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: none given", ErrInvalidSites)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// public is an account as this package hands it out: without its hash.
func public(a Account) Account {
	a.PasswordHash = ""
	return a
}
