package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/formd/formd/internal/journal"
)

// The decision state in memory: which idempotency keys are journaled,
// which participant claims are held, how many places are taken. Every
// decision is made under one mutex before its record is appended, so the
// journaled record carries its outcome (decisionKey in its data), and the
// state is a pure function of the journal: replaying the records (or a
// snapshot and the records after it) gives it back.
//
// A decision never rests on another that is not durable yet: a request
// whose key, claim or last place is held by an append still in flight
// waits for that append, then decides again. So an answer is never given
// on the strength of a record that a failed append then took back.

// The outcomes a record carries.
const (
	decStored    = "stored"
	decDuplicate = "duplicate"
	decRejected  = "rejected"
	// decSameAs is a resend of a live entry's content under a new key:
	// answered as that entry (formd's store.Outcome.SameAs).
	decSameAs = "same-as"
	// decSpam is an entry intake's spam checks flagged: kept as
	// evidence, holding no claim and no place.
	decSpam = "spam"
)

// decisionKey is the member of a record's data that carries its outcome:
// first, so that a rebuild reads it without decoding the data. Field
// names cannot start with '_', as for form.ExtraKey. (A product version
// would give the journal a column of its own: a migration.)
const decisionKey = "_decision"

var (
	errLost     = errors.New("an earlier submission this one depends on may or may not be journaled (its append failed); restart to rebuild the state from the journal")
	errDiverged = errors.New("the state in memory and the journal disagree")
)

type claimRec struct {
	seq uint64 // the live entry holding the claim
	fp  uint64 // the first 8 bytes of its fingerprint, to tell a resend
}

// decision is one request's decision while its record is appended.
type decision struct {
	entry   journal.Entry // the record appended, its data carrying outcome
	outcome string
	keyH    [16]byte
	claims  [][16]byte
	done    chan struct{} // closed once settled
	// lost says the append failed and the record may be in the journal
	// or not: what depends on it is refused until a restart rebuilds.
	lost bool
}

// verdict is what decide answers.
type verdict struct {
	d       *decision       // a new decision: append d.entry, then settle it
	pending *decision       // the key's first send is being appended
	known   bool            // the key is journaled already
	wait    <-chan struct{} // wait for this append, then decide again
}

type state struct {
	mu       sync.Mutex
	capacity int64 // 0: no limit
	keys     map[[16]byte]struct{}
	claims   map[[16]byte]claimRec
	taken    int64
	last     uint64 // the highest position applied

	pendKeys   map[[16]byte]*decision
	pendClaims map[[16]byte]*decision
	pendTaken  int64
	// capWait, when set, is closed when a place held by an append in
	// flight is given back or kept.
	capWait chan struct{}
}

func newState(capacity int64, sizeHint int) *state {
	return &state{
		capacity:   capacity,
		keys:       make(map[[16]byte]struct{}, sizeHint),
		claims:     make(map[[16]byte]claimRec, sizeHint),
		pendKeys:   map[[16]byte]*decision{},
		pendClaims: map[[16]byte]*decision{},
	}
}

// keyHash is how the state knows an idempotency key: a hash of (form,
// key) that holds no pointer, so that ten million of them cost the
// garbage collector nothing to scan.
func keyHash(form, key string) [16]byte {
	b := make([]byte, 0, 96)
	b = append(b, form...)
	b = append(b, 0)
	b = append(b, key...)
	sum := sha256.Sum256(b)
	return [16]byte(sum[:16])
}

// claimBytes turns a claim token (32 hex digits, form.Accepted.Claims)
// into its 16 bytes; another token is hashed.
func claimBytes(form, c string) [16]byte {
	var out [16]byte
	if len(c) == 32 {
		if _, err := hex.Decode(out[:], []byte(c)); err == nil {
			return out
		}
	}
	return keyHash(form, "claim:"+c)
}

func fpPrefix(fp [32]byte) uint64 { return binary.LittleEndian.Uint64(fp[:8]) }

// decide decides entry e, a new sync submission, unless its key is known
// or pending, or it depends on an append in flight.
func (s *state) decide(e journal.Entry) (verdict, error) {
	kh := keyHash(e.Form, e.Key)
	claims := make([][16]byte, 0, len(e.Claims))
	for _, c := range e.Claims {
		claims = append(claims, claimBytes(e.Form, c))
	}
	fp := fpPrefix(e.Fingerprint)
	s.mu.Lock()
	defer s.mu.Unlock()
	if p, ok := s.pendKeys[kh]; ok {
		if p.lost {
			return verdict{}, errLost
		}
		return verdict{pending: p}, nil
	}
	if _, ok := s.keys[kh]; ok {
		return verdict{known: true}, nil
	}
	outcome := decStored
	if e.Spam {
		outcome, claims = decSpam, nil
	}
	for _, c := range claims {
		if p, ok := s.pendClaims[c]; ok {
			if p.lost {
				return verdict{}, errLost
			}
			return verdict{wait: p.done}, nil
		}
		if h, ok := s.claims[c]; ok {
			outcome = decDuplicate
			if h.fp == fp {
				outcome = decSameAs
			}
			break
		}
	}
	if outcome == decStored && s.capacity > 0 && s.taken+s.pendTaken >= s.capacity {
		if s.pendTaken > 0 {
			// The last places are held by appends in flight: if one
			// fails, its place is this one's.
			if s.capWait == nil {
				s.capWait = make(chan struct{})
			}
			return verdict{wait: s.capWait}, nil
		}
		outcome = decRejected
	}
	d := &decision{outcome: outcome, keyH: kh, done: make(chan struct{})}
	d.entry = e
	d.entry.Data = withDecision(e.Data, outcome)
	s.pendKeys[kh] = d
	if outcome == decStored {
		d.claims = claims
		for _, c := range claims {
			s.pendClaims[c] = d
		}
		s.pendTaken++
	}
	return verdict{d: d}, nil
}

// durable settles d: its record is in the journal at seq.
func (s *state) durable(d *decision, seq uint64) {
	s.mu.Lock()
	delete(s.pendKeys, d.keyH)
	s.keys[d.keyH] = struct{}{}
	if d.outcome == decStored {
		fp := fpPrefix(d.entry.Fingerprint)
		for _, c := range d.claims {
			delete(s.pendClaims, c)
			s.claims[c] = claimRec{seq: seq, fp: fp}
		}
		s.pendTaken--
		s.taken++
		s.wakeCapacity()
	}
	s.last = max(s.last, seq)
	s.mu.Unlock()
	close(d.done)
}

// abort settles d: its record is not in the journal.
func (s *state) abort(d *decision) {
	s.mu.Lock()
	delete(s.pendKeys, d.keyH)
	if d.outcome == decStored {
		for _, c := range d.claims {
			delete(s.pendClaims, c)
		}
		s.pendTaken--
		s.wakeCapacity()
	}
	s.mu.Unlock()
	close(d.done)
}

// lose settles d as unknown: its key and claims stay held, and whatever
// meets them is refused (errLost) until a restart.
func (s *state) lose(d *decision) {
	s.mu.Lock()
	d.lost = true
	s.mu.Unlock()
	close(d.done)
}

func (s *state) wakeCapacity() {
	if s.capWait != nil {
		close(s.capWait)
		s.capWait = nil
	}
}

// pendingKey says whether (form, key) is being appended.
func (s *state) pendingKey(form, key string) bool {
	kh := keyHash(form, key)
	s.mu.Lock()
	_, ok := s.pendKeys[kh]
	s.mu.Unlock()
	return ok
}

// apply adds a journaled record to the state (a rebuild). Records come
// in journal order, each at most once.
func (s *state) apply(e journal.Entry) error {
	outcome, ok := decisionOf(e.Data)
	if !ok {
		return fmt.Errorf("record %d: no %s in its data", e.Seq, decisionKey)
	}
	s.keys[keyHash(e.Form, e.Key)] = struct{}{}
	if outcome == decStored {
		fp := fpPrefix(e.Fingerprint)
		for _, c := range e.Claims {
			s.claims[claimBytes(e.Form, c)] = claimRec{seq: e.Seq, fp: fp}
		}
		s.taken++
	}
	s.last = max(s.last, e.Seq)
	return nil
}

// withDecision puts the outcome first in an entry's data (a JSON object).
func withDecision(data []byte, outcome string) []byte {
	b := make([]byte, 0, len(data)+len(decisionKey)+len(outcome)+8)
	b = append(b, `{"`+decisionKey+`":"`...)
	b = append(b, outcome...)
	b = append(b, '"')
	rest := bytes.TrimSpace(data)
	if len(rest) > 2 { // more than {}
		b = append(b, ',')
		b = append(b, rest[1:]...)
	} else {
		b = append(b, '}')
	}
	return b
}

// decisionOf reads the outcome withDecision put first.
func decisionOf(data []byte) (string, bool) {
	const prefix = `{"` + decisionKey + `":"`
	if !bytes.HasPrefix(data, []byte(prefix)) {
		return "", false
	}
	rest := data[len(prefix):]
	i := bytes.IndexByte(rest, '"')
	if i < 0 {
		return "", false
	}
	return string(rest[:i]), true
}
