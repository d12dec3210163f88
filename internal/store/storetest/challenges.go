package storetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/formd/formd/internal/store"
)

// ChallengeStore is a store driver with its proof-of-work replay store.
type ChallengeStore interface {
	store.Challenges
	Close() error
}

// ChallengeOpener returns a function that opens the store on one fresh
// database; each call opens that same database again (a restart, or a
// second instance when the first is still open).
type ChallengeOpener func(t *testing.T) func() ChallengeStore

// RunChallenges runs the rules of the replay store: a challenge is spent
// by one (form, key), a retry of that key is the same spend, a second
// submission is refused by the database — after a restart and from a
// second instance too — and rows go once their challenge has expired.
func RunChallenges(t *testing.T, newStore ChallengeOpener) {
	t.Helper()
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	use := func(sig, form, key string) store.ChallengeUse {
		return store.ChallengeUse{Signature: sig, Form: form, Key: key, Expires: now.Add(10 * time.Minute)}
	}
	spend := func(t *testing.T, s store.Challenges, u store.ChallengeUse, at time.Time, want bool) {
		t.Helper()
		got, err := s.SpendChallenge(ctxT(t), u, at)
		if err != nil || got != want {
			t.Fatalf("SpendChallenge(%+v) = %v, %v; want %v", u, got, err, want)
		}
	}
	t.Run("OnceByOneKey", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)()
		defer s.Close()
		spend(t, s, use("s1", "f", "k1"), now, true)
		spend(t, s, use("s1", "f", "k1"), now, true)  // a retry of the key
		spend(t, s, use("s1", "f", "k2"), now, false) // another submission
		spend(t, s, use("s1", "g", "k1"), now, false) // the same key on another form
		spend(t, s, use("s2", "f", "k2"), now, true)
	})
	t.Run("RefusedAfterARestart", func(t *testing.T) {
		t.Parallel()
		open := newStore(t)
		s := open()
		spend(t, s, use("r1", "f", "k1"), now, true)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s = open()
		defer s.Close()
		spend(t, s, use("r1", "f", "k2"), now, false)
		spend(t, s, use("r1", "f", "k1"), now, true)
	})
	t.Run("OneOfManyAcrossInstances", func(t *testing.T) {
		t.Parallel()
		open := newStore(t)
		a, b := open(), open()
		defer a.Close()
		defer b.Close()
		const n = 16
		var wg sync.WaitGroup
		won := make(chan string, n)
		errs := make(chan error, n)
		for i := range n {
			s := a
			if i%2 == 1 {
				s = b
			}
			wg.Go(func() {
				key := fmt.Sprintf("k%d", i)
				ok, err := s.SpendChallenge(ctxT(t), use("c1", "f", key), now)
				if err != nil {
					errs <- err
				}
				if ok {
					won <- key
				}
			})
		}
		wg.Wait()
		close(won)
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		var winners []string
		for k := range won {
			winners = append(winners, k)
		}
		if len(winners) != 1 {
			t.Fatalf("winners %v, want exactly one", winners)
		}
		spend(t, a, use("c1", "f", winners[0]), now, true)
		spend(t, b, use("c1", "f", winners[0]), now, true)
	})
	t.Run("PrunedAfterExpiry", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)()
		defer s.Close()
		spend(t, s, use("p1", "f", "k1"), now, true)
		// Within the grace after its expiry the row stays.
		in := now.Add(10*time.Minute + store.ChallengeGrace - time.Second)
		spend(t, s, use("p2", "f", "k1"), in, true)
		spend(t, s, use("p1", "f", "k2"), in, false)
		// After it, the next spend prunes it (the verifier refuses the
		// expired challenge before it would come here again).
		after := now.Add(10*time.Minute + store.ChallengeGrace)
		spend(t, s, use("p3", "f", "k1"), after, true)
		spend(t, s, use("p1", "f", "k2"), after, true)
	})
	t.Run("SpamReasons", func(t *testing.T) {
		t.Parallel()
		s := newStore(t)()
		defer s.Close()
		ctx := ctxT(t)
		if r, err := s.SpamReason(ctx, "f", "k"); r != "" || err != nil {
			t.Fatalf("no note: %q, %v", r, err)
		}
		for _, r := range []string{"challenge-missing", "challenge-replayed"} {
			if err := s.NoteSpamReason(ctx, "f", "k", r, now); err != nil {
				t.Fatal(err)
			}
			if got, err := s.SpamReason(ctx, "f", "k"); got != r || err != nil {
				t.Fatalf("SpamReason = %q, %v; want %q", got, err, r)
			}
		}
		if r, _ := s.SpamReason(ctx, "g", "k"); r != "" {
			t.Fatalf("another form's key: %q", r)
		}
		if err := s.NoteSpamReason(ctx, "f", "new", "challenge-expired", now.Add(store.SpamReasonKeep)); err != nil {
			t.Fatal(err)
		}
		if r, _ := s.SpamReason(ctx, "f", "k"); r != "" {
			t.Fatalf("a note older than SpamReasonKeep stays: %q", r)
		}
	})
}
