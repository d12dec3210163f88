package outbox

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/formd/formd/internal/attempt"
)

// The breaker's own tests: a fake clock (a time.Time the test moves) and
// results fed by hand.

func testBreaker() *breaker {
	return newBreaker(DefaultBreakerWindow, DefaultBreakerTrip, 30*time.Second, 4*time.Minute, 30*time.Second)
}

var t0 = time.Date(2027, 3, 1, 9, 0, 0, 0, time.UTC)

// A receiver that fails a third of its attempts at random never trips
// the breaker: each of 300 events is tried until it passes, as its retry
// schedule would, and no attempt is ever held back.
func TestBreakerIgnoresAFlakyReceiver(t *testing.T) {
	t.Parallel()
	for seed := range uint64(20) {
		b := testBreaker()
		rng := rand.New(rand.NewPCG(seed, 1))
		now := t0
		for event := range 300 {
			for try := 0; ; try++ {
				now = now.Add(10 * time.Millisecond)
				ok, probe, _ := b.allow(now)
				if !ok || probe {
					t.Fatalf("seed %d, event %d, try %d: the breaker held a flaky receiver back (ok %v, probe %v)", seed, event, try, ok, probe)
				}
				v := success
				if rng.IntN(3) == 0 {
					v = failure
				}
				if b.record(now, v, false) {
					t.Fatalf("seed %d, event %d: the breaker opened on a receiver failing a third of the time", seed, event)
				}
				if v == success {
					break
				}
			}
		}
	}
}

// A dead endpoint opens the breaker once its window is mostly failures;
// the failures of attempts still in flight change nothing; when the
// period ends one probe goes, the others wait for it; a failed probe
// doubles the period (up to the maximum), a successful one closes it.
func TestBreakerOpensProbesAndCloses(t *testing.T) {
	t.Parallel()
	b := testBreaker()
	now := t0
	for i := range DefaultBreakerTrip - 1 {
		if b.record(now, failure, false) {
			t.Fatalf("opened after %d results, before the window is full", i+1)
		}
	}
	opened := false
	for range DefaultBreakerWindow - DefaultBreakerTrip + 1 {
		opened = b.record(now, failure, false)
	}
	if !opened || !b.open() || !b.blocked(now) {
		t.Fatalf("a window of failures did not open the breaker (opened %v, open %v)", opened, b.open())
	}
	// Attempts that were in flight fail: the period stays 30s.
	for range 10 {
		if b.record(now.Add(time.Second), failure, false) {
			t.Fatal("an in-flight failure opened the open breaker again")
		}
	}
	if ok, _, wait := b.allow(now.Add(29 * time.Second)); ok || !wait.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("29s after opening: ok %v, wait until %v; want held until %v", ok, wait, t0.Add(30*time.Second))
	}
	// The period ends: one probe, the rest wait for its result.
	periods := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 4 * time.Minute}
	for i, p := range periods {
		now = now.Add(p)
		ok, probe, _ := b.allow(now)
		if !ok || !probe {
			t.Fatalf("period %d (%v) over: ok %v probe %v, want the probe", i, p, ok, probe)
		}
		if ok, _, _ := b.allow(now); ok || !b.blocked(now) {
			t.Fatalf("period %d: a second attempt went through while the probe is out", i)
		}
		if i == len(periods)-1 {
			break
		}
		if !b.record(now, failure, true) {
			t.Fatalf("period %d: a failed probe did not open the breaker again", i)
		}
		if ok, _, wait := b.allow(now); ok || wait.Sub(now) != periods[i+1] {
			t.Fatalf("after failed probe %d: held for %v, want %v", i, wait.Sub(now), periods[i+1])
		}
	}
	if b.record(now, success, true) || b.open() || b.blocked(now) {
		t.Fatal("a successful probe did not close the breaker")
	}
	if ok, probe, _ := b.allow(now); !ok || probe {
		t.Fatalf("closed: ok %v probe %v", ok, probe)
	}
	// Closed afresh: it takes a full window of failures again, and the
	// period starts again at 30s.
	for range DefaultBreakerTrip - 1 {
		b.record(now, failure, false)
	}
	if b.open() {
		t.Fatal("the window was not cleared when the breaker closed")
	}
	for range DefaultBreakerWindow {
		b.record(now, failure, false)
	}
	if ok, _, wait := b.allow(now); ok || wait.Sub(now) != 30*time.Second {
		t.Fatalf("opened again: held %v, want 30s", wait.Sub(now))
	}
}

// A probe whose result says nothing about the endpoint (a recipient
// refused) or never comes (its sender died) does not leave the breaker
// half-open for good: the next attempt probes again.
func TestBreakerLostProbe(t *testing.T) {
	t.Parallel()
	b := testBreaker()
	for range DefaultBreakerWindow {
		b.record(t0, failure, false)
	}
	now := t0.Add(30 * time.Second)
	if ok, probe, _ := b.allow(now); !ok || !probe {
		t.Fatal("no probe at the end of the period")
	}
	b.record(now, neutral, true)
	if ok, probe, _ := b.allow(now); !ok || !probe {
		t.Fatal("after a neutral probe, no new probe")
	}
	if ok, _, _ := b.allow(now.Add(29 * time.Second)); ok {
		t.Fatal("a second probe while the first is out")
	}
	if ok, probe, _ := b.allow(now.Add(30 * time.Second)); !ok || !probe {
		t.Fatal("a probe unanswered for the probe timeout was not replaced")
	}
}

// Only a retry the endpoint caused is a failure; a delivery is a success;
// a refusal, a skip or a deferral says nothing.
func TestVerdictOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		o     attempt.Outcome
		fault bool
		want  verdict
	}{
		{attempt.Delivered, false, success},
		{attempt.Retry, true, failure},
		{attempt.Retry, false, neutral},
		{attempt.Refused, false, neutral},
		{attempt.Refused, true, neutral},
		{attempt.Gone, false, neutral},
		{attempt.Skipped, false, neutral},
		{attempt.Deferred, false, neutral},
	} {
		if got := verdictOf(tc.o, tc.fault); got != tc.want {
			t.Errorf("verdictOf(%s, %v) = %v, want %v", tc.o, tc.fault, got, tc.want)
		}
	}
}
