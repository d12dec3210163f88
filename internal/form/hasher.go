package form

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"hash"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Hasher keys every hash formd derives from submitted values — content
// fingerprints (the receipts), participant claims, keys derived from
// content, request digests — with the installation's secret: HMAC-SHA-256.
// An unkeyed hash of a phone number can be reversed by hashing every phone
// number; a keyed one cannot without the secret. It is safe for
// concurrent use.
type Hasher struct {
	pool sync.Pool
}

// SecretSize is the size of an installation secret in bytes.
const SecretSize = 32

// NewHasher makes a hasher keyed with secret.
func NewHasher(secret []byte) *Hasher {
	key := slices.Clone(secret)
	h := &Hasher{}
	h.pool.New = func() any { return hmac.New(sha256.New, key) }
	return h
}

// Sum is the keyed hash of b.
func (h *Hasher) Sum(b []byte) (out [32]byte) {
	m := h.pool.Get().(hash.Hash)
	m.Reset()
	m.Write(b)
	m.Sum(out[:0])
	h.pool.Put(m)
	return out
}

// Digest is the keyed hash of a request's values as they were sent,
// before validation (each string in its comparison form, the reserved
// fields left out): it recognises a retry of the same request whatever the
// form's definition has become since the first was journaled.
func (h *Hasher) Digest(formID string, in map[string]any) [32]byte {
	names := make([]string, 0, len(in))
	for n := range in {
		if n != KeyField && n != TimeField {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	buf := make([]byte, 0, 256)
	buf = append(buf, "formd/request/v1\n"...)
	buf = appendLenPrefixed(buf, formID)
	for _, n := range names {
		buf = appendLenPrefixed(buf, n)
		buf = appendLenPrefixed(buf, canonical(in[n]))
	}
	return h.Sum(buf)
}

// DataDigest is Digest of an entry's normalized data (Accepted.Data)
// taken as the values of a request: the fields the form does not define
// (under ExtraKey) at the top level again. Normalizing twice changes
// nothing, so two sends of one content have one DataDigest however each
// was spelled. It stands in for the digest of entries journaled before
// digests (the journal's upgrade records it), and a retry of such an
// entry is compared by it. ok is false when data is not an object.
func (h *Hasher) DataDigest(formID string, data []byte) (d [32]byte, ok bool) {
	in, err := EntryValues(data)
	if err != nil {
		return d, false
	}
	return h.Digest(formID, in), true
}

// EntryValues turns an entry's normalized data (Accepted.Data) back into
// values as a request sends them, for Validate or Digest: numbers as
// json.Number, the fields the form does not define (under ExtraKey) at
// the top level again.
func EntryValues(data []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var in map[string]any
	if err := dec.Decode(&in); err != nil {
		return nil, err
	}
	if in == nil {
		return nil, errors.New("entry data is not an object")
	}
	if extra, isObj := in[ExtraKey].(map[string]any); isObj {
		delete(in, ExtraKey)
		for k, v := range extra {
			if _, taken := in[k]; !taken {
				in[k] = v
			}
		}
	}
	return in, nil
}

// canonical writes a decoded value as one string, strings in their
// comparison form, so that re-encoding a body (JSON to form fields, other
// spacing) does not make a retry look like new content.
func canonical(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return fold(x)
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = canonical(it)
		}
		return "[" + strings.Join(parts, listSep) + "]"
	case []string:
		parts := make([]string, len(x))
		for i, it := range x {
			parts[i] = fold(it)
		}
		return "[" + strings.Join(parts, listSep) + "]"
	}
	b, _ := json.Marshal(v)
	return string(b)
}
