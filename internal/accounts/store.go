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

// OwnsAll says whether the account is an owner of every site: the first
// such account is given the admin token printed at first start.
func (a Account) OwnsAll() bool {
	return a.Role == Owner && len(a.Sites) == 1 && a.Sites[0] == AllSites
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
	// EndSessions ends the account's sessions in the same transaction,
	// all but the one whose hash is KeepSession (nil: all of them).
	EndSessions bool
	KeepSession []byte
	At          time.Time
}

// Token is an API token as listed: never the token itself.
type Token struct {
	ID           string
	AccountID    string
	AccountEmail string // filled when read
	Name         string
	// CreatedBy is who made the token (Principal.String) when it was not
	// the account itself, such as an owner making one for another
	// account; "" otherwise. Every use of the token names them.
	CreatedBy  string
	CreatedAt  time.Time
	LastUsedAt time.Time // zero: never used
	RevokedAt  time.Time // zero: live
	// Scope narrows what the token may do: ScopeDoor, or "" for
	// everything its account's role allows.
	Scope string
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

// Attempts counts the sign-ins of one key (an account and address pair,
// an address, a setup page's address) in the run that began at Since.
// Prev is the attempt before the one just counted; zero for the first of
// a run.
type Attempts struct {
	Key   string
	Count int
	Since time.Time
	Prev  time.Time
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
	ResetStore
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
	// AdminTokenByHash finds the admin token (the legacy tokens table) by
	// its hash, marking it used the first time: ID "admin", AccountID the
	// first owner of every site ("" while there is none), RevokedAt set if
	// revoked; ErrNotFound.
	AdminTokenByHash(ctx context.Context, hash []byte) (Token, error)
	// AdminToken reads the admin token, as AdminTokenByHash; ErrNotFound
	// when none was ever issued.
	AdminToken(ctx context.Context) (Token, error)
	// RevokeAdminToken marks the admin token revoked; ErrNotFound,
	// ErrRevoked.
	RevokeAdminToken(ctx context.Context, at time.Time, e Entry) error
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
	// EndSessions ends every session of an account but the one whose
	// hash is keep (nil: every one), and says how many ended; the entry is
	// recorded in the same transaction.
	EndSessions(ctx context.Context, accountID string, keep []byte, e Entry) (int, error)
	// AddLoginAttempt counts one sign-in attempt against each key, in one
	// atomic step per key, and returns the counts after it with the time
	// of each key's previous attempt. A key whose last attempt was at or
	// before quietSince starts a new run (count 1, no previous attempt).
	AddLoginAttempt(ctx context.Context, keys []string, at, quietSince time.Time) ([]Attempts, error)
	// LoginSucceeded forgets the keys' attempts and, when rehash is not
	// empty, replaces the account's password hash (same password, new
	// parameters).
	LoginSucceeded(ctx context.Context, keys []string, accountID, rehash string, e Entry) error
	// PruneAccounts deletes sessions and reset links expired at now and
	// attempt runs whose last attempt was before attemptsBefore, and
	// returns how many rows went.
	PruneAccounts(ctx context.Context, now, attemptsBefore time.Time) (int, error)
}

// SetupStore keeps the one-time setup code of a server without accounts.
type SetupStore interface {
	// PutSetupCode stores the setup code while no account exists (false
	// otherwise, and any code is removed). Unless replace, a code still
	// live at `at` stays and the answer is false: the one row decides
	// which of several starting instances issues the link.
	PutSetupCode(ctx context.Context, hash []byte, at, expires time.Time, replace bool) (bool, error)
	// SetupCodeHash is the hash of the setup code live at `at`, to compare
	// with before any password is hashed: ErrSetupDone once an account
	// exists, ErrSetupCode when there is no live code.
	SetupCodeHash(ctx context.Context, at time.Time) ([]byte, error)
	// UseSetupCode, in one transaction, burns the code (ErrSetupCode if it
	// is not the live one at `at`) and creates the first account
	// (ErrSetupDone if any account exists).
	UseSetupCode(ctx context.Context, hash []byte, at time.Time, a Account, e Entry) error
}

// ResetStore keeps the one-time password reset links.
type ResetStore interface {
	// CreatePasswordReset stores a link's hash for an account, valid
	// until expires.
	CreatePasswordReset(ctx context.Context, hash []byte, accountID string, at, expires time.Time, e Entry) error
	// PasswordResetAccount is the account of the link live at `at`;
	// ErrResetInvalid.
	PasswordResetAccount(ctx context.Context, hash []byte, at time.Time) (Account, error)
	// UsePasswordReset, in one transaction, burns the link (ErrResetInvalid
	// unless it is live at `at` and the account's) and the account's other
	// links, sets the password hash and ends the account's sessions.
	UsePasswordReset(ctx context.Context, hash []byte, accountID string, at time.Time, passwordHash string, e Entry) error
}

// AuditStore keeps the audit log.
type AuditStore interface {
	AppendAudit(ctx context.Context, e Entry) error
	// ListAudit lists entries newest first, at most f.Limit.
	ListAudit(ctx context.Context, f AuditFilter) ([]Entry, error)
}
