package accounts

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// CookieName is the session cookie.
const CookieName = "formd_session"

// CSRFField and CSRFHeader carry the session's CSRF token on a
// state-changing request: the form field of a console page, or the header
// of a script.
const (
	CSRFField  = "_csrf"
	CSRFHeader = "X-CSRF-Token"
)

// Login checks an e-mail and password and returns the account, ready for
// IssueSession. ip is the client's address (as the server's trusted
// proxies say).
//
// Sign-ins are slowed per (e-mail, address), never per e-mail alone, so
// that nobody can lock an owner out by failing on purpose from elsewhere:
// past Config.MaxLoginAttempts in a row, each attempt of the pair must
// wait after the one before twice as long as the last wait, or it gets a
// *LockedError without the password being checked. An address has a
// budget of Config.AddressAttempts that a success does not refill. A
// success starts its own pair over; a pause of Config.LoginWindow starts
// every count over. An unknown e-mail, a disabled account and a wrong
// password all get ErrBadCredentials after the same work, so the answer
// does not tell whether an account exists.
//
// The counts are rows of the store, so they hold across instances and
// restarts.
func (s *Service) Login(ctx context.Context, email, password, ip string) (Account, error) {
	return s.LoginDevice(ctx, email, password, ip, "")
}

// LoginDevice is Login from a browser whose device cookie (DeviceCookie)
// is device, "" for none: a browser that signed in to the account before
// is spared the account's slowdown (Config.AccountAttempts).
func (s *Service) LoginDevice(ctx context.Context, email, password, ip, device string) (Account, error) {
	addr, err := NormalizeEmail(email)
	if err != nil {
		return Account{}, fmt.Errorf("sign in: %w", err)
	}
	if !s.passwordAllowed(addr) {
		return Account{}, fmt.Errorf("sign in: %w", ErrPasswordsOff)
	}
	now := s.now()
	pair := "pair:" + addr + " " + ip
	keys := []string{pair}
	if ip != "" {
		keys = append(keys, "ip:"+ip)
	}
	attempts, err := s.st.AddLoginAttempt(ctx, keys, now, now.Add(-s.cfg.LoginWindow))
	if err != nil {
		return Account{}, fmt.Errorf("sign in: %w", err)
	}
	if locked, record := s.throttle(attempts, now); locked != nil {
		if record {
			// Recorded when a key is first slowed and then at each power
			// of two, so that a flood of attempts does not flood the log.
			if err := s.st.AppendAudit(ctx, Entry{At: now, Actor: anonymous(ip), Action: "login.locked", Target: addr,
				Detail: fmt.Sprintf("ip=%s until=%s", ip, locked.Until.UTC().Format(time.RFC3339))}); err != nil {
				return Account{}, fmt.Errorf("sign in: %w", err)
			}
		}
		return Account{}, fmt.Errorf("sign in: %w", locked)
	}
	// The account's own count, of the sign-ins its pairs let through,
	// from browsers it does not know: many addresses' guesses add up
	// here, and slow only those browsers.
	if !s.knownDevice(device, addr) {
		acct, err := s.st.AddLoginAttempt(ctx, []string{"acct:" + addr}, now, now.Add(-s.cfg.LoginWindow))
		if err != nil {
			return Account{}, fmt.Errorf("sign in: %w", err)
		}
		if locked, record := s.throttle(acct, now); locked != nil {
			if record {
				if err := s.st.AppendAudit(ctx, Entry{At: now, Actor: anonymous(ip), Action: "login.locked", Target: addr,
					Detail: fmt.Sprintf("account from unknown browsers; ip=%s until=%s", ip, locked.Until.UTC().Format(time.RFC3339))}); err != nil {
					return Account{}, fmt.Errorf("sign in: %w", err)
				}
			}
			return Account{}, fmt.Errorf("sign in: %w", locked)
		}
	}
	a, err := s.st.AccountByEmail(ctx, addr)
	if err != nil && !errors.Is(err, ErrNotFound) {
		return Account{}, fmt.Errorf("sign in: %w", err)
	}
	ok, err := s.verify(ctx, a.PasswordHash, password)
	if err != nil {
		return Account{}, fmt.Errorf("sign in: %w", err)
	}
	if !ok || a.Disabled {
		if err := s.st.AppendAudit(ctx, Entry{At: now, Actor: anonymous(ip), Action: "login.failure", Target: addr, Detail: "ip=" + ip}); err != nil {
			return Account{}, fmt.Errorf("sign in: %w", err)
		}
		return Account{}, fmt.Errorf("sign in: %w", ErrBadCredentials)
	}
	if s.cfg.PasswordsOff && a.Role != Owner {
		// The break-glass address is an owner's, or no one's.
		return Account{}, fmt.Errorf("sign in: the break-glass account is not an owner: %w", ErrPasswordsOff)
	}
	var rehash string
	if NeedsRehash(a.PasswordHash, s.cfg.Password) {
		if rehash, err = s.hash(ctx, password); err != nil {
			rehash = "" // the old hash still works; try again next time
		}
	}
	if err := s.st.LoginSucceeded(ctx, []string{pair}, a.ID, rehash, Entry{At: now, Actor: a.Email, Action: "login", Target: a.Email, Detail: "ip=" + ip}); err != nil {
		return Account{}, fmt.Errorf("sign in: %w", err)
	}
	return public(a), nil
}

// throttle judges the counts of one sign-in: the pair's backoff and the
// address's budget. It returns the lock, if any, and whether the lock is
// worth an audit line.
func (s *Service) throttle(attempts []Attempts, now time.Time) (*LockedError, bool) {
	var locked *LockedError
	record := false
	lock := func(until time.Time, count, from int) {
		if locked == nil || until.After(locked.Until) {
			locked = &LockedError{Until: until}
		}
		n := count - from
		record = record || n&(n-1) == 0 // 1, 2, 4, 8… past the limit
	}
	for _, a := range attempts {
		switch {
		case strings.HasPrefix(a.Key, "pair:"):
			if over := a.Count - s.cfg.MaxLoginAttempts; over > 0 && !a.Prev.IsZero() {
				if until := a.Prev.Add(s.backoff(over)); now.Before(until) {
					lock(until, a.Count, s.cfg.MaxLoginAttempts)
				}
			}
		case strings.HasPrefix(a.Key, "acct:"):
			if over := a.Count - s.cfg.AccountAttempts; over > 0 && !a.Prev.IsZero() {
				if until := a.Prev.Add(s.backoff(over)); now.Before(until) {
					lock(until, a.Count, s.cfg.AccountAttempts)
				}
			}
		case a.Count > s.cfg.AddressAttempts:
			lock(now.Add(s.cfg.LoginWindow), a.Count, s.cfg.AddressAttempts)
		}
	}
	return locked, record
}

// backoff is the wait before the over-th attempt past the limit: 1s,
// doubling, at most the login window.
func (s *Service) backoff(over int) time.Duration {
	if over > 30 {
		return s.cfg.LoginWindow
	}
	return min(time.Second<<(over-1), s.cfg.LoginWindow)
}

func anonymous(ip string) string {
	if ip == "" {
		return "anonymous"
	}
	return "anonymous at " + ip
}

// IssueSession starts a session for an account that has just proved who it
// is (Login, Setup) and sets its cookie: HttpOnly, SameSite=Lax, Path=/,
// Secure under TLS or with Config.SecureCookies. A session cookie the
// request already had is ended, so an id planted before sign-in is never
// promoted. It returns the new principal, whose CSRFToken the page puts in
// its forms.
func (s *Service) IssueSession(w http.ResponseWriter, r *http.Request, a Account) (Principal, error) {
	ctx := r.Context()
	if c, err := r.Cookie(CookieName); err == nil && c.Value != "" {
		if err := s.st.DeleteSession(ctx, HashToken(c.Value), Entry{}); err != nil {
			return Principal{}, fmt.Errorf("start session: end the old one: %w", err)
		}
	}
	id := randomString(32)
	now := s.now()
	sess := Session{Hash: HashToken(id), AccountID: a.ID, CSRF: randomString(32), CreatedAt: now, LastSeenAt: now,
		ExpiresAt: s.expiry(now, now)}
	e := Entry{At: now, Actor: a.Email, Action: "session.start", Target: a.Email,
		Detail: "expires=" + sess.ExpiresAt.UTC().Format(time.RFC3339)}
	if err := s.st.CreateSession(ctx, sess, e); err != nil {
		return Principal{}, fmt.Errorf("start session: %w", err)
	}
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: id, Path: "/", MaxAge: int(s.cfg.SessionMaxAge / time.Second),
		HttpOnly: true, Secure: s.secureCookie(r), SameSite: http.SameSiteLaxMode,
	})
	// This browser has signed in to the account: its next sign-ins are
	// spared the account's slowdown.
	http.SetCookie(w, &http.Cookie{
		Name: DeviceCookie, Value: s.deviceToken(a.Email), Path: "/admin/", MaxAge: int(deviceMaxAge / time.Second),
		HttpOnly: true, Secure: s.secureCookie(r), SameSite: http.SameSiteLaxMode,
	})
	p := a.principal(ViaSession)
	p.CSRFToken = sess.CSRF
	p.session = sess.Hash
	return p, nil
}

// DeviceCookie names the cookie by which a browser that signed in to an
// account is known at its next sign-ins: the account's e-mail and a
// nonce, signed with Config.DeviceKey. It is not a credential: it only
// spares the browser the account's slowdown.
const DeviceCookie = "formd_device"

// deviceMaxAge is how long a browser stays known without signing in.
const deviceMaxAge = 365 * 24 * time.Hour

func (s *Service) deviceMAC(addr, nonce string) string {
	mac := hmac.New(sha256.New, s.cfg.DeviceKey)
	fmt.Fprintf(mac, "formd/device/v1\n%d:%s\n%s", len(addr), addr, nonce)
	return base64.RawURLEncoding.EncodeToString(mac.Sum(nil)[:18])
}

// deviceToken is a device cookie for the account of e-mail addr.
func (s *Service) deviceToken(addr string) string {
	nonce := randomString(12)
	return nonce + "." + s.deviceMAC(addr, nonce)
}

// knownDevice says the device cookie is one this server gave a browser
// that signed in to the account of e-mail addr.
func (s *Service) knownDevice(token, addr string) bool {
	nonce, mac, ok := strings.Cut(token, ".")
	if !ok || nonce == "" || len(token) > 200 {
		return false
	}
	return hmac.Equal([]byte(mac), []byte(s.deviceMAC(addr, nonce)))
}

// expiry is when a session created at created and last seen at seen ends:
// the sooner of the idle and the absolute limit.
func (s *Service) expiry(created, seen time.Time) time.Time {
	idle, abs := seen.Add(s.cfg.IdleTimeout), created.Add(s.cfg.SessionMaxAge)
	if idle.Before(abs) {
		return idle
	}
	return abs
}

// ClearSession signs out: it deletes the request's session, if any, and
// tells the browser to drop the cookie.
func (s *Service) ClearSession(w http.ResponseWriter, r *http.Request) error {
	http.SetCookie(w, &http.Cookie{
		Name: CookieName, Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.secureCookie(r), SameSite: http.SameSiteLaxMode,
	})
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return nil
	}
	ctx := r.Context()
	hash := HashToken(c.Value)
	_, a, err := s.st.SessionByHash(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	if err := s.st.DeleteSession(ctx, hash, Entry{At: s.now(), Actor: a.Email, Action: "logout", Target: a.Email}); err != nil {
		return fmt.Errorf("sign out: %w", err)
	}
	return nil
}

// Authenticate finds who sent a request: an Authorization: Bearer token
// (the scheme in any case), else the session cookie. A request with an
// Authorization header is judged by it alone. ErrUnauthenticated when
// neither proves anyone.
func (s *Service) Authenticate(r *http.Request) (Principal, error) {
	ctx := r.Context()
	if h := r.Header.Get("Authorization"); h != "" {
		scheme, token, _ := strings.Cut(strings.TrimSpace(h), " ")
		token = strings.TrimSpace(token)
		if !strings.EqualFold(scheme, "bearer") || token == "" {
			return Principal{}, fmt.Errorf("authorization header: want Bearer <token>: %w", ErrUnauthenticated)
		}
		return s.authenticateToken(ctx, token)
	}
	c, err := r.Cookie(CookieName)
	if err != nil || c.Value == "" {
		return Principal{}, ErrUnauthenticated
	}
	return s.authenticateSession(ctx, c.Value)
}

func (s *Service) authenticateSession(ctx context.Context, id string) (Principal, error) {
	hash := HashToken(id)
	sess, a, err := s.st.SessionByHash(ctx, hash)
	if errors.Is(err, ErrNotFound) {
		return Principal{}, fmt.Errorf("session: %w", ErrUnauthenticated)
	}
	if err != nil {
		return Principal{}, fmt.Errorf("check session: %w", err)
	}
	now := s.now()
	// The configured limits are applied again, so that shortening them
	// takes effect on sessions already running.
	if !now.Before(sess.ExpiresAt) || !now.Before(s.expiry(sess.CreatedAt, sess.LastSeenAt)) {
		return Principal{}, fmt.Errorf("session expired: %w", ErrUnauthenticated)
	}
	if a.Disabled {
		return Principal{}, fmt.Errorf("account disabled: %w", ErrUnauthenticated)
	}
	if sess.LastSeenAt.Before(now.Add(-touchEvery)) {
		if err := s.st.TouchSession(ctx, hash, now, s.expiry(sess.CreatedAt, now)); err != nil {
			return Principal{}, fmt.Errorf("record session use: %w", err)
		}
	}
	p := a.principal(ViaSession)
	p.CSRFToken = sess.CSRF
	p.session = hash
	return p, nil
}

// CheckCSRF checks a state-changing request of a signed-in browser: it
// must carry the session's CSRF token as the _csrf form field or the
// X-CSRF-Token header. Requests authenticated by a bearer token, which a
// browser never adds on its own, and safe methods (GET, HEAD, OPTIONS)
// need none.
func (s *Service) CheckCSRF(r *http.Request, p Principal) error {
	if p.Via != ViaSession {
		return nil
	}
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	// A page of another site cannot read the token, but one that got it
	// (a leak, an XSS elsewhere on a shared host) must not use it either:
	// a browser names the page's origin, and it must be this server's.
	if !sameSite(r) {
		return ErrCSRF
	}
	got := r.Header.Get(CSRFHeader)
	if got == "" {
		got = r.PostFormValue(CSRFField)
	}
	if p.CSRFToken == "" || subtle.ConstantTimeCompare([]byte(got), []byte(p.CSRFToken)) != 1 {
		return ErrCSRF
	}
	return nil
}

// sameSite says a browser's state-changing request came from a page of
// this server: its Origin (when sent; "null" is a foreign or sandboxed
// page) names this host, and Sec-Fetch-Site, when sent, does not say
// cross-site.
func sameSite(r *http.Request) bool {
	if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
		return false
	}
	o := r.Header.Get("Origin")
	if o == "" {
		return true
	}
	u, err := url.Parse(o)
	return err == nil && u.Host != "" && strings.EqualFold(u.Host, r.Host)
}

// Prune deletes expired sessions and finished sign-in windows; the server
// calls it now and then.
func (s *Service) Prune(ctx context.Context) (int, error) {
	now := s.now()
	n, err := s.st.PruneAccounts(ctx, now, now.Add(-s.cfg.LoginWindow))
	if err != nil {
		return 0, fmt.Errorf("prune sessions: %w", err)
	}
	return n, nil
}

// secureCookie says whether the session cookie of r's answer is Secure:
// under TLS, behind a trusted proxy's https, or with Config.SecureCookies.
func (s *Service) secureCookie(r *http.Request) bool {
	if r.TLS != nil || s.cfg.SecureCookies {
		return true
	}
	return s.cfg.IsHTTPS != nil && s.cfg.IsHTTPS(r)
}
