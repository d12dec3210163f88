// Package challenge is formd's self-hosted proof-of-work: challenges in
// the ALTCHA v1 format (so the maintained altcha widget and altcha-lib
// solve and verify them), bound to one form and a few minutes, and the
// difficulty that rises for an address sending in a burst.
//
// A challenge is the SHA-256 of a salt and a secret number below
// maxnumber, signed with an HMAC-SHA-256 keyed from the installation's
// secret. The salt carries its parameters (`?expires=…&form=…&`), so the
// signature covers them: a solution names its form and its expiry and
// cannot be moved to another. Whether a solution was spent already is the
// store's to say (store.Challenges), not this package's.
package challenge

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Algorithm is the only hash formd issues and accepts.
const Algorithm = "SHA-256"

// DefaultTTL is how long a challenge may be solved and used: long enough
// to fill in a form, short enough that a stock of solutions goes stale.
const DefaultTTL = 10 * time.Minute

// maxPayload bounds the encoded solution formd reads.
const maxPayload = 2048

// Challenge is what a client gets to solve (the widget's challengeurl
// answer).
type Challenge struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	MaxNumber int64  `json:"maxnumber"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
}

// Payload is a solved challenge as the widget sends it: base64 of this
// JSON, in the form's `altcha` field.
type Payload struct {
	Algorithm string `json:"algorithm"`
	Challenge string `json:"challenge"`
	Number    int64  `json:"number"`
	Salt      string `json:"salt"`
	Signature string `json:"signature"`
	Took      int64  `json:"took,omitempty"`
}

// Solved is a verified solution: what the replay store keeps of it.
type Solved struct {
	// Signature identifies the challenge (hex); one challenge is spent
	// once.
	Signature string
	Expires   time.Time
}

// Signer issues and verifies challenges with one key.
type Signer struct {
	key []byte
}

// NewSigner keys the challenges from the installation's secret: the key
// is derived (HMAC-SHA-256 of a label), so the secret itself never signs
// anything a client sees, and written in hex because ALTCHA's HMAC key is
// a string.
func NewSigner(secret []byte) *Signer {
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte("formd/altcha/v1"))
	return NewSignerKey(hex.EncodeToString(mac.Sum(nil)))
}

// NewSignerKey signs with key as altcha-lib's hmacKey (tests and vectors).
func NewSignerKey(key string) *Signer { return &Signer{key: []byte(key)} }

// Issue makes a challenge for form: a random salt carrying the form and
// the expiry, and a random number in [0, maxNumber].
func (s *Signer) Issue(form string, maxNumber int64, expires time.Time) Challenge {
	var b [12]byte
	rand.Read(b[:]) //nolint:errcheck // crypto/rand does not fail on supported systems
	salt := hex.EncodeToString(b[:]) + "?" + saltParams(form, expires) + "&"
	var n [8]byte
	rand.Read(n[:]) //nolint:errcheck // as above
	number := int64(binary.BigEndian.Uint64(n[:]) % uint64(maxNumber+1))
	return s.issue(salt, number, maxNumber)
}

// saltParams are the parameters a salt carries, in altcha-lib's encoding
// (URLSearchParams: sorted here so that one form and time give one text).
func saltParams(form string, expires time.Time) string {
	v := url.Values{}
	v.Set("expires", strconv.FormatInt(expires.Unix(), 10))
	v.Set("form", form)
	return v.Encode()
}

func (s *Signer) issue(salt string, number, maxNumber int64) Challenge {
	ch := hashHex(salt, number)
	return Challenge{Algorithm: Algorithm, Challenge: ch, MaxNumber: maxNumber, Salt: salt, Signature: s.sign(ch)}
}

func (s *Signer) sign(challenge string) string {
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(challenge))
	return hex.EncodeToString(mac.Sum(nil))
}

func hashHex(salt string, number int64) string {
	sum := sha256.Sum256([]byte(salt + strconv.FormatInt(number, 10)))
	return hex.EncodeToString(sum[:])
}

// Verify checks an encoded solution for form at now: well formed, signed
// by this signer, for this form, not expired, and solved. The error is
// one of this package's (see Reason); it says nothing of replays.
func (s *Signer) Verify(encoded, form string, now time.Time) (Solved, error) {
	p, err := Decode(encoded)
	if err != nil {
		return Solved{}, err
	}
	if p.Algorithm != Algorithm || len(p.Signature) != 64 || len(p.Challenge) != 64 || p.Number < 0 {
		return Solved{}, ErrMalformed
	}
	// The signature first: nothing else a client wrote is trusted before
	// it, and it is the cheapest check that a forger fails.
	want := s.sign(p.Challenge)
	if !hmac.Equal([]byte(want), []byte(strings.ToLower(p.Signature))) {
		return Solved{}, ErrForged
	}
	// Then the hash: it ties the salt, and so its parameters, to the
	// signed challenge.
	if hashHex(p.Salt, p.Number) != p.Challenge {
		return Solved{}, ErrWrongSolution
	}
	params, ok := Params(p.Salt)
	if !ok {
		return Solved{}, ErrMalformed
	}
	exp, err := strconv.ParseInt(params.Get("expires"), 10, 64)
	if err != nil {
		return Solved{}, ErrMalformed
	}
	expires := time.Unix(exp, 0)
	if !now.Before(expires) {
		return Solved{}, ErrExpired
	}
	if params.Get("form") != form {
		return Solved{}, ErrWrongForm
	}
	return Solved{Signature: want, Expires: expires}, nil
}

// Decode reads an encoded solution (base64 of its JSON, standard or URL
// alphabet).
func Decode(encoded string) (Payload, error) {
	var p Payload
	encoded = strings.TrimSpace(encoded)
	if encoded == "" || len(encoded) > maxPayload {
		return p, ErrMalformed
	}
	raw, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		if raw, err = base64.RawURLEncoding.DecodeString(strings.TrimRight(encoded, "=")); err != nil {
			return p, ErrMalformed
		}
	}
	if err := json.Unmarshal(raw, &p); err != nil {
		return p, ErrMalformed
	}
	return p, nil
}

// Encode is the widget's encoding of a payload.
func Encode(p Payload) string {
	b, _ := json.Marshal(p) //nolint:errchkjson // a struct of strings and numbers
	return base64.StdEncoding.EncodeToString(b)
}

// Params are the parameters a salt carries (after its '?').
func Params(salt string) (url.Values, bool) {
	_, q, ok := strings.Cut(salt, "?")
	if !ok {
		return nil, false
	}
	v, err := url.ParseQuery(strings.TrimSuffix(q, "&"))
	return v, err == nil
}

// Solve finds the number by trying each from 0, as a client does; for
// tests, vectors and the load generator.
func Solve(c Challenge) (Payload, bool) {
	for n := int64(0); n <= c.MaxNumber; n++ {
		if hashHex(c.Salt, n) == c.Challenge {
			return Payload{Algorithm: c.Algorithm, Challenge: c.Challenge, Number: n, Salt: c.Salt, Signature: c.Signature}, true
		}
	}
	return Payload{}, false
}
