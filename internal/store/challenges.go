package store

import (
	"context"
	"time"
)

// ChallengeUse is a solved proof-of-work challenge spent on a submission:
// its signature (unique: one challenge, one submission) and the (form,
// key) that spent it, kept until the challenge expires.
type ChallengeUse struct {
	Signature string
	Form      string
	Key       string
	Expires   time.Time
}

// Challenges is the replay store for proof-of-work solutions, durable and
// shared by every instance on one store: the database's unique signature
// refuses a second use, never a read followed by a write.
type Challenges interface {
	// SpendChallenge records u at now, in a transaction of its own. It
	// reports true when the challenge is spent by u's (form, key): now,
	// or earlier by the same key (a retry), and false when another
	// submission spent it. Rows of expired challenges are pruned as it
	// goes. Intake no longer calls it (DESIGN invariant 12): a new entry's
	// decision spends its solution (journal.Entry.Challenge) by the same
	// rule, in the decision's transaction; the rows of both are one
	// replay store, so solutions spent at intake by earlier releases stay
	// spent.
	SpendChallenge(ctx context.Context, u ChallengeUse, now time.Time) (bool, error)
	// NoteSpamReason keeps why (form, key) is spam, for the console; the
	// last note for a key wins. A decision records its entry's reason
	// (journal.Entry.SpamReason) itself.
	NoteSpamReason(ctx context.Context, form, key, reason string, now time.Time) error
	// SpamReason is the note for (form, key), or "".
	SpamReason(ctx context.Context, form, key string) (string, error)
}

// ChallengePrune bounds the expired rows one SpendChallenge deletes.
const ChallengePrune = 100

// ChallengeGrace is how long past its expiry a spent challenge's row is
// kept: instances' clocks differ a little, and a row must outlive every
// instance's idea of the challenge's life.
const ChallengeGrace = 5 * time.Minute

// SpamReasonKeep is how long a spam reason is kept: longer than any
// review of the spam, and the row holds no personal data (a form, a key
// and a reason code).
const SpamReasonKeep = 400 * 24 * time.Hour
