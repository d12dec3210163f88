package accounts

import (
	"context"
	"time"
)

// Account is a person (or a team's shared address) who signs in.
type Account struct {
	ID    string
	Email string // normalized (NormalizeEmail), unique
	Name  string
	Role  Role
	// Sites are the sites the account may act on; AllSites for every one.
	Sites []string
	// PasswordHash is the argon2id PHC string; empty for an account that
	// signs in with no password (tokens only). Never leaves this package's
	// Service: what it returns has it blanked.
	PasswordHash string
	Disabled     bool
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// principal is who an account is, reached through via.
func (a Account) principal(via string) Principal {
	return Principal{AccountID: a.ID, Email: a.Email, Name: a.Name, Role: a.Role, Sites: a.Sites, Via: via}
}

// Change is a change of an account; nil fields stay as they are.
type Change struct {
	Name         *string
	Role         *Role
	Sites        []string // nil: unchanged
	PasswordHash *string
	// Disabled true also ends the account's sessions, in the same
	// transaction; its tokens stop working while it is disabled.
	Disabled *bool
	At       time.Time
}

// Token is an API token as listed: never the token itself.
type Token struct {
	ID           string
	AccountID    string
	AccountEmail string // filled when read
	Name         string
	CreatedAt    time.Time
	LastUsedAt   time.Time // zero: never used
	RevokedAt    time.Time // zero: live
}

// Session is a signed-in browser, found by the hash of its cookie.
type Session struct {
	Hash       []byte
	AccountID  string
	CSRF       string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt is the sooner of the idle and the absolute limit, moved on
	// when the session is used.
	ExpiresAt time.Time
}

// Attempts counts the sign-ins of one key (an IP or an e-mail) in the
// window that began at Since.
type Attempts struct {
	Key   string
	Count int
	Since time.Time
}

// Entry is one line of the audit log: who did what, when, to what.
type Entry struct {
	ID     int64 // assigned by the store, increasing
	At     time.Time
	Actor  string // Principal.String(): never a secret
	Action string // such as login.failure, token.create, entry.cancel
	Site   string
	Form   string
	Target string // what was acted on: an account's e-mail, a token or entry id
	Detail string
}

// AuditFilter selects audit entries, newest first.
type AuditFilter struct {
	// Sites limits entries to these sites; nil for all.
	Sites []string
	Form  string // "" for every form
	// Before is the cursor: entries with an ID below it; 0 for the newest.
	Before int64
	Limit  int
}

// Store is what this package needs from a store driver (sqlitestore,
// pgstore), grouped by concern; storetest.RunAccounts checks each rule
// against every driver. Every method that changes an account, token or
// session takes the audit Entry to record in the same transaction.
type Store interface {
	AccountStore
	TokenStore
	SessionStore
	SetupStore
	AuditStore
}

// AccountStore keeps accounts.
type AccountStore interface {
	// CreateAccount inserts an account; ErrEmailTaken when its e-mail is
	// taken (decided by the unique index, under concurrency too).
	CreateAccount(ctx context.Context, a Account, e Entry) error
	// AccountByID and AccountByEmail read an account; ErrNotFound.
	AccountByID(ctx context.Context, id string) (Account, error)
	AccountByEmail(ctx context.Context, email string) (Account, error)
	// ListAccounts lists every account by e-mail.
	ListAccounts(ctx context.Context) ([]Account, error)
	// UpdateAccount applies a change and returns the account after it;
	// ErrNotFound.
	UpdateAccount(ctx context.Context, id string, c Change, e Entry) (Account, error)
}

// TokenStore keeps API tokens, by the hash of the token.
type TokenStore interface {
	CreateAPIToken(ctx context.Context, t Token, hash []byte, e Entry) error
	// APITokenByHash finds a token and its account; ErrNotFound. A revoked
	// token is returned with RevokedAt set.
	APITokenByHash(ctx context.Context, hash []byte) (Token, Account, error)
	// APITokenByID reads a token; ErrNotFound.
	APITokenByID(ctx context.Context, id string) (Token, error)
	// ListAPITokens lists an account's tokens ("" for every account's),
	// newest first.
	ListAPITokens(ctx context.Context, accountID string) ([]Token, error)
	// TouchAPIToken sets last-used to at, if it is older than notAfter.
	TouchAPIToken(ctx context.Context, id string, at, notAfter time.Time) error
	// RevokeAPIToken marks a live token revoked; ErrNotFound, ErrRevoked.
	RevokeAPIToken(ctx context.Context, id string, at time.Time, e Entry) error
	// TokenValid says whether the legacy tokens table (the admin token)
	// has this hash.
	TokenValid(ctx context.Context, hash []byte) (bool, error)
}

// SessionStore keeps browser sessions and sign-in attempts.
type SessionStore interface {
	CreateSession(ctx context.Context, s Session, e Entry) error
	// SessionByHash finds a session and its account; ErrNotFound.
	SessionByHash(ctx context.Context, hash []byte) (Session, Account, error)
	// TouchSession records use of a session and moves its expiry.
	TouchSession(ctx context.Context, hash []byte, lastSeen, expires time.Time) error
	// DeleteSession ends a session (sign-out); no error if it is gone.
	DeleteSession(ctx context.Context, hash []byte, e Entry) error
	// AddLoginAttempt counts one sign-in attempt against each key, in one
	// atomic step per key, starting a new window for a key whose window
	// began at or before windowStart, and returns the counts after it.
	AddLoginAttempt(ctx context.Context, keys []string, at, windowStart time.Time) ([]Attempts, error)
	// LoginSucceeded forgets the keys' attempts and, when rehash is not
	// empty, replaces the account's password hash (same password, new
	// parameters).
	LoginSucceeded(ctx context.Context, keys []string, accountID, rehash string, e Entry) error
	// PruneAccounts deletes sessions expired at now and attempt windows
	// that began before attemptsBefore, and returns how many rows went.
	PruneAccounts(ctx context.Context, now, attemptsBefore time.Time) (int, error)
}

// SetupStore keeps the one-time setup code of a server without accounts.
type SetupStore interface {
	// PutSetupCode replaces the setup code, but only while no account
	// exists (false otherwise).
	PutSetupCode(ctx context.Context, hash []byte, expires time.Time) (bool, error)
	// UseSetupCode, in one transaction, burns the code (ErrSetupCode if it
	// is not the live one at `at`) and creates the first account
	// (ErrSetupDone if any account exists).
	UseSetupCode(ctx context.Context, hash []byte, at time.Time, a Account, e Entry) error
}

// AuditStore keeps the audit log.
type AuditStore interface {
	AppendAudit(ctx context.Context, e Entry) error
	// ListAudit lists entries newest first, at most f.Limit.
	ListAudit(ctx context.Context, f AuditFilter) ([]Entry, error)
}
