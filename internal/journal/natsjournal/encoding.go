package natsjournal

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/formd/formd/internal/journal"
)

// subjectPrefix is the stream name as a subject token.
func subjectPrefix(stream string) string {
	return token(strings.ToLower(stream))
}

// token makes s a valid subject token, keeping it readable when it is
// made of letters, digits, '-' and '_' and does not start with '_';
// anything else (the empty site included) becomes '_' and its hex, so no
// two values share a token.
func token(s string) string {
	plain := s != "" && s[0] != '_'
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if plain {
		return s
	}
	return "_" + hex.EncodeToString([]byte(s))
}

// keyHash names a key in a subject: 128 bits of its SHA-256, far from any
// collision among one form's keys; Lookup checks the key anyway.
func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

// msgID names (form, key) in a message's Nats-Msg-Id, for the server's
// duplicate window, and in the async appends awaiting the stream.
func msgID(form, key string) string { return token(form) + "." + keyHash(key) }

// anySite is the site token of every subject this release writes: the
// empty site's. A form that moves to another site keeps its subjects, so
// the stream's one message per subject still keeps (form, key) unique.
// Releases before wrote the form's site there; their entries stay under
// those subjects and are found by keySubject's wildcard.
const anySite = "_"

// subject is where an entry of (form, key) is written.
func (j *Journal) subject(form, key string) string {
	return j.prefix + "." + anySite + "." + token(form) + "." + keyHash(key)
}

// keySubject matches the entry of (form, key) whatever site token it was
// written under: this release's and earlier releases' subjects alike.
func (j *Journal) keySubject(form, key string) string {
	return j.prefix + ".*." + token(form) + "." + keyHash(key)
}

// filterSubject selects a form's entries, or every entry for the empty
// form. The site is no longer in the subjects; Read checks it on each
// entry.
func (j *Journal) filterSubject(form string) string {
	if form == "" {
		return j.prefix + ".>"
	}
	return j.prefix + ".*." + token(form) + ".*"
}

// record is an entry as the stream keeps it. Data is kept as a string so
// that its bytes come back exactly as they went in.
type record struct {
	ID          string   `json:"id"`
	Site        string   `json:"site"`
	Form        string   `json:"form"`
	Key         string   `json:"key"`
	Fingerprint string   `json:"fingerprint"`
	Digest      string   `json:"digest,omitempty"`
	ReceivedAt  string   `json:"received_at"`
	Spam        bool     `json:"spam,omitempty"`
	Claims      []string `json:"claims,omitempty"`
	Data        string   `json:"data"`
	Waiter      string   `json:"waiter,omitempty"`
	// Checks is journal.Checks: absent in entries of earlier releases.
	Checks json.RawMessage `json:"checks,omitempty"`
}

func encode(e journal.Entry) ([]byte, error) {
	return json.Marshal(record{
		ID: e.ID, Site: e.Site, Form: e.Form, Key: e.Key,
		Fingerprint: hex.EncodeToString(e.Fingerprint[:]),
		Digest:      digestHex(e.Digest),
		ReceivedAt:  e.ReceivedAt.UTC().Format(time.RFC3339Nano),
		Spam:        e.Spam, Claims: e.Claims, Data: string(e.Data), Waiter: e.Waiter,
		Checks: journal.Checks(e),
	})
}

// digestHex writes a digest, or nothing for the zero digest of an entry
// that has none.
func digestHex(d [32]byte) string {
	if d == ([32]byte{}) {
		return ""
	}
	return hex.EncodeToString(d[:])
}

func decode(seq uint64, b []byte) (journal.Entry, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return journal.Entry{}, fmt.Errorf("decode journal entry %d: %w", seq, err)
	}
	e := journal.Entry{Seq: seq, ID: r.ID, Site: r.Site, Form: r.Form, Key: r.Key, Spam: r.Spam, Claims: r.Claims, Data: json.RawMessage(r.Data), Waiter: r.Waiter}
	fp, err := hex.DecodeString(r.Fingerprint)
	if err != nil || len(fp) != len(e.Fingerprint) {
		return journal.Entry{}, fmt.Errorf("decode journal entry %d: bad fingerprint", seq)
	}
	copy(e.Fingerprint[:], fp)
	if err := journal.SetChecks(&e, r.Checks); err != nil {
		return journal.Entry{}, fmt.Errorf("decode journal entry %d: checks: %w", seq, err)
	}
	if r.Digest != "" {
		d, err := hex.DecodeString(r.Digest)
		if err != nil || len(d) != len(e.Digest) {
			return journal.Entry{}, fmt.Errorf("decode journal entry %d: bad digest", seq)
		}
		copy(e.Digest[:], d)
	}
	if e.ReceivedAt, err = time.Parse(time.RFC3339Nano, r.ReceivedAt); err != nil {
		return journal.Entry{}, fmt.Errorf("decode journal entry %d: %w", seq, err)
	}
	return e, nil
}
