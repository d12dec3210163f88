// Package form holds what formd knows about a form: its definition as the
// owner writes it (YAML or JSON), the checks that refuse a bad definition with
// a message naming the form, the field and what would be valid, and the
// validation and normalization of one submission against it.
package form

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// Field types.
const (
	TypeText        = "text"
	TypeTextarea    = "textarea"
	TypeEmail       = "email"
	TypePhone       = "phone"
	TypeNumber      = "number"
	TypeSelect      = "select"
	TypeMultiselect = "multiselect"
	TypeCheckbox    = "checkbox"
	TypeDate        = "date"
	// TypeFile is a field whose value names uploads made beforehand
	// ("upload:<id>"), see file.go.
	TypeFile = "file"
	// TypeHidden is a text value the person never sees: where a
	// submission came from (utm_source, ref), taken by the hosted page
	// from its query string or set by the SDK, and validated as text.
	TypeHidden = "hidden"
)

var fieldTypes = []string{TypeText, TypeTextarea, TypeEmail, TypePhone, TypeNumber, TypeSelect, TypeMultiselect, TypeCheckbox, TypeDate, TypeFile, TypeHidden}

// What a form does when its capacity is taken.
const (
	WhenFullReject   = "reject"
	WhenFullWaitlist = "waitlist"

	// What a registered participant's new key is told on a full form
	// (Definition.UniqueAnswer).
	UniqueAnswerGeneric   = "generic"
	UniqueAnswerDuplicate = "duplicate"
)

// What a form does with submitted fields it does not define.
const (
	UnknownKeep   = "keep"
	UnknownReject = "reject"
)

// Durability modes. Sync forms answer only after the journal has fsync'd the
// entry; async forms answer 202 as soon as the entry is queued for the
// journal writer, trading the crash guarantee for latency.
const (
	DurabilitySync  = "sync"
	DurabilityAsync = "async"
)

// Default length limits keep one submission's storage bounded when the owner
// sets none.
const (
	DefaultTextMax     = 1000
	DefaultTextareaMax = 10000
)

// Definition is one form as its owner declares it. The YAML/JSON names are
// a contract with owners' files and the admin API: renaming one breaks
// every definition that uses it.
type Definition struct {
	ID          string     `yaml:"id" json:"id"`
	Site        string     `yaml:"site" json:"site,omitempty"`
	Title       Text       `yaml:"title" json:"title,omitempty"`
	Description Text       `yaml:"description" json:"description,omitempty"`
	Fields      []Field    `yaml:"fields" json:"fields"`
	Unique      [][]string `yaml:"unique" json:"unique,omitempty"`
	Capacity    *int       `yaml:"capacity" json:"capacity,omitempty"`
	WhenFull    string     `yaml:"when_full" json:"when_full,omitempty"`
	// UniqueAnswer says what a new key whose participant is already
	// registered is told when the form is full and turns people away:
	// generic (the default) answers capacity-reached, as to anyone new, so
	// that a full form cannot be asked who is registered; duplicate
	// answers duplicate-entry. While places remain, or when the form
	// waitlists, a registered participant is told duplicate-entry either
	// way (finding that out costs a registration, which the owner sees).
	UniqueAnswer string     `yaml:"unique_answer" json:"unique_answer,omitempty"`
	OpensAt      *time.Time `yaml:"opens_at" json:"opens_at,omitempty"`
	ClosesAt     *time.Time `yaml:"closes_at" json:"closes_at,omitempty"`
	Durability   string     `yaml:"durability" json:"durability,omitempty"`
	RequireKey   bool       `yaml:"require_key" json:"require_key,omitempty"`
	Spam         *SpamRules `yaml:"spam" json:"spam,omitempty"`
	Origins      []string   `yaml:"origins" json:"origins,omitempty"`
	Retention    *Duration  `yaml:"retention" json:"retention,omitempty"`
	RateLimit    *RateLimit `yaml:"rate_limit" json:"rate_limit,omitempty"`
	Redirect     string     `yaml:"redirect" json:"redirect,omitempty"`
	// Notify names who hears of the form's entries: webhooks and e-mail.
	Notify *Notify `yaml:"notify" json:"-"`
	// UnknownFields says what happens to submitted fields the form does
	// not define: kept under extra (the default) or refused.
	UnknownFields string `yaml:"unknown_fields" json:"unknown_fields,omitempty"`
	// Pages groups the fields into steps with titles: the hosted page
	// shows one at a time (one page with headings without JavaScript).
	Pages []Page `yaml:"pages" json:"pages,omitempty"`
	// Review decides new entries as pending (holding their place) until
	// an editor approves or declines each.
	Review bool `yaml:"review" json:"review,omitempty"`
	// Drafts lets a participant save the answers typed so far on the
	// server, under the submission's key, and resume them on any device
	// (PUT /v1/forms/{form}/drafts/{key}); DraftTTL is how long a draft
	// is kept after its last save (DraftTTLDefault when unset).
	Drafts   bool      `yaml:"drafts" json:"drafts,omitempty"`
	DraftTTL *Duration `yaml:"draft_ttl" json:"draft_ttl,omitempty"`
	// EditUntil lets a participant change their answers from their link
	// until this time: an RFC 3339 time, or "closes_at" for the form's
	// closes_at (EditDeadline). Unset, answers cannot be changed.
	EditUntil string `yaml:"edit_until" json:"edit_until,omitempty"`
	// SelfErase erases a participant's data as soon as they ask from
	// their link; without it the request waits for the organizer.
	SelfErase bool `yaml:"self_erase" json:"self_erase,omitempty"`
	// Checkin gives every stored entry a ticket (package ticket) and
	// lets the door check it in, once (DESIGN §4 "Check-in").
	Checkin bool `yaml:"checkin" json:"checkin,omitempty"`

	// source is this form\'s definition as YAML, kept so the store can hold
	// exactly what the owner wrote.
	source []byte
}

// Field is one input of a form.
type Field struct {
	Name        string   `yaml:"name" json:"name"`
	Type        string   `yaml:"type" json:"type"`
	Label       Text     `yaml:"label" json:"label,omitempty"`
	Help        Text     `yaml:"help" json:"help,omitempty"`
	Placeholder Text     `yaml:"placeholder" json:"placeholder,omitempty"`
	Required    bool     `yaml:"required" json:"required,omitempty"`
	Min         *Bound   `yaml:"min" json:"min,omitempty"`
	Max         *Bound   `yaml:"max" json:"max,omitempty"`
	MaxLength   *int     `yaml:"max_length" json:"max_length,omitempty"`
	Integer     bool     `yaml:"integer" json:"integer,omitempty"`
	Pattern     string   `yaml:"pattern" json:"pattern,omitempty"`
	Region      string   `yaml:"region" json:"region,omitempty"`
	Options     []Option `yaml:"options" json:"options,omitempty"`
	// Normalize lists how a text field's values are compared (for unique
	// sets and fingerprints) beyond NFKC, such as [strip_spaces, upper]
	// for an ID number. The stored value stays as typed.
	Normalize []string `yaml:"normalize" json:"normalize,omitempty"`
	// MaxSize, MaxFiles and Accept bound a file field: the size of one
	// file (default DefaultMaxSize), how many files (default 1) and the
	// types a file's bytes may be (MIME types such as image/jpeg or
	// image/*, or extensions such as .pdf; any type when empty).
	MaxSize  *Size    `yaml:"max_size" json:"max_size,omitempty"`
	MaxFiles *int     `yaml:"max_files" json:"max_files,omitempty"`
	Accept   []string `yaml:"accept" json:"accept,omitempty"`
	// MaxPixels bounds an image's width × height, read from its header
	// (default DefaultMaxPixels): a decompression bomb is refused.
	MaxPixels *int64 `yaml:"max_pixels" json:"max_pixels,omitempty"`
	// ShowIf says when the field is shown, from earlier fields' answers
	// (conditions.go); a field not shown is not required and a value
	// sent for it is not stored.
	ShowIf *Condition `yaml:"show_if" json:"show_if,omitempty"`
	// Prefill lets the hosted page's query string (/f/exam?class=3B) or
	// the SDK give the field its first value; the person may change it,
	// and it is validated like any other.
	Prefill bool `yaml:"prefill" json:"prefill,omitempty"`
}

// Page is one step of a form: a title and the fields it shows, by name.
type Page struct {
	Title  Text     `yaml:"title" json:"title,omitempty"`
	Fields []string `yaml:"fields" json:"fields"`
}

// Option is one choice of a select or multiselect field, written as a plain
// value or as {value, label, capacity}.
type Option struct {
	Value string `yaml:"value" json:"value"`
	Label Text   `yaml:"label" json:"label,omitempty"`
	// Capacity gives the option places of its own (a session of 40): the
	// store decides them as it decides the form's, in the entry's
	// transaction, and the form's when_full applies to each option. Only
	// options of a select field may have one.
	Capacity *int `yaml:"capacity" json:"capacity,omitempty"`
}

// UnmarshalYAML accepts a scalar (the value, which is also the label) or a
// {value, label} map.
func (o *Option) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		o.Value = n.Value
		return nil
	}
	type plain Option
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*o = Option(p)
	return nil
}

// SpamRules are the cheap checks that mark a submission as spam: a honeypot
// field that people never see and bots fill, and a minimum time between the
// form being shown (the `_ts` field, Unix milliseconds) and its submission.
type SpamRules struct {
	Honeypot   string  `yaml:"honeypot" json:"honeypot,omitempty"`
	MinSeconds float64 `yaml:"min_seconds" json:"min_seconds,omitempty"`
	// Challenge, when "pow", asks every new key for a solved
	// proof-of-work challenge (ALTCHA-compatible, package challenge).
	Challenge string `yaml:"challenge" json:"challenge,omitempty"`
	// Difficulty is the challenge's base: the largest number a solver may
	// have to try (ALTCHA's maxnumber); DefaultDifficulty when zero.
	Difficulty int64 `yaml:"difficulty" json:"difficulty,omitempty"`
	// ChallengeFallback says what a submission without a valid solution
	// gets: refuse (a 4xx problem, the default), spam (kept as spam with
	// the reason) or honeypot (a missing solution leaves the decision to
	// the honeypot and the minimum time, so the page works without
	// JavaScript; a bad one is still spam).
	ChallengeFallback string `yaml:"challenge_fallback" json:"challenge_fallback,omitempty"`
}

// Proof-of-work settings (spam.challenge, spam.challenge_fallback).
const (
	ChallengePoW      = "pow"
	FallbackRefuse    = "refuse"
	FallbackSpam      = "spam"
	FallbackHoneypot  = "honeypot"
	DefaultDifficulty = 50_000
	// MinDifficulty and MaxDifficulty bound spam.difficulty: below, a
	// solution costs a bot nothing; above, a phone takes minutes.
	MinDifficulty = 1_000
	MaxDifficulty = 5_000_000
)

// NeedsChallenge says the form asks for a proof-of-work solution.
func (r *SpamRules) NeedsChallenge() bool { return r != nil && r.Challenge == ChallengePoW }

// BaseDifficulty is the form's difficulty before any adaptation.
func (r *SpamRules) BaseDifficulty() int64 {
	if r == nil || r.Difficulty <= 0 {
		return DefaultDifficulty
	}
	return r.Difficulty
}

// Fallback is challenge_fallback with its default.
func (r *SpamRules) Fallback() string {
	if r == nil || r.ChallengeFallback == "" {
		return FallbackRefuse
	}
	return r.ChallengeFallback
}

// RateLimit bounds how many submissions one client IP may make to one form.
// Off disables the limit for this form.
type RateLimit struct {
	Requests int      `yaml:"requests" json:"requests"`
	Per      Duration `yaml:"per" json:"per"`
	Burst    int      `yaml:"burst" json:"burst,omitempty"`
	Off      bool     `yaml:"-" json:"off,omitempty"`
}

// UnmarshalYAML accepts `off` as well as {requests, per, burst}.
func (r *RateLimit) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		switch strings.ToLower(n.Value) {
		case "off", "false", "none":
			*r = RateLimit{Off: true}
			return nil
		}
		return fmt.Errorf("want `off` or {requests, per, burst}, not %q", n.Value)
	}
	type plain RateLimit
	var p plain
	if err := n.Decode(&p); err != nil {
		return err
	}
	*r = RateLimit(p)
	return nil
}

// Bound is a min or max: a number for numbers, lengths and counts, a date
// (YYYY-MM-DD) for date fields. The field's type says which is meant.
type Bound struct {
	Num   float64
	Date  string
	raw   string
	isNum bool
}

// UnmarshalYAML keeps the scalar so the field's type can interpret it.
func (b *Bound) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a number or a date", n.Line)
	}
	b.raw = n.Value
	if f, err := strconv.ParseFloat(n.Value, 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
		b.Num, b.isNum = f, true
	}
	if _, err := time.Parse(time.DateOnly, n.Value); err == nil {
		b.Date = n.Value
	}
	return nil
}

// MarshalJSON writes the bound as the owner wrote it.
func (b Bound) MarshalJSON() ([]byte, error) {
	if b.Date != "" {
		return []byte(strconv.Quote(b.Date)), nil
	}
	return []byte(strconv.FormatFloat(b.Num, 'f', -1, 64)), nil
}

// Duration is a time.Duration that also accepts days ("365d").
type Duration time.Duration

// ParseDuration reads a Go duration or a whole number of days ("30d").
func ParseDuration(s string) (Duration, error) {
	s = strings.TrimSpace(s)
	if d, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.Atoi(d)
		if err != nil || n < 0 {
			return 0, fmt.Errorf("%q is not a duration: want a number of days such as 30d, or 12h, 90m", s)
		}
		return Duration(time.Duration(n) * 24 * time.Hour), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration: want a number of days such as 30d, or 12h, 90m", s)
	}
	return Duration(d), nil
}

// UnmarshalYAML parses "365d", "12h", "90s".
func (d *Duration) UnmarshalYAML(n *yaml.Node) error {
	v, err := ParseDuration(n.Value)
	if err != nil {
		return err
	}
	*d = v
	return nil
}

// MarshalJSON writes the duration in Go's notation.
func (d Duration) MarshalJSON() ([]byte, error) {
	return []byte(strconv.Quote(time.Duration(d).String())), nil
}

var (
	idPattern   = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`)
	namePattern = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_]{0,63}$`)
)

// Reserved body fields, which no form may declare: the idempotency key of
// plain HTML posts and the time the form was shown.
const (
	KeyField  = "_key"
	TimeField = "_ts"
)

// EditUntilClosesAt is the edit_until that follows the form's closes_at.
const EditUntilClosesAt = "closes_at"

// EditDeadline is when changes close; false when the form allows none
// (no edit_until, or one that does not parse, which check refuses).
func (d *Definition) EditDeadline() (time.Time, bool) {
	switch d.EditUntil {
	case "":
		return time.Time{}, false
	case EditUntilClosesAt:
		if d.ClosesAt == nil {
			return time.Time{}, false
		}
		return *d.ClosesAt, true
	}
	t, err := time.Parse(time.RFC3339, d.EditUntil)
	return t, err == nil
}

// EditableAt says whether a participant may change their answers at t.
func (d *Definition) EditableAt(t time.Time) bool {
	until, ok := d.EditDeadline()
	return ok && t.Before(until)
}

// DraftTTLDefault is how long a draft is kept after its last save when
// the form sets no draft_ttl: 30 days.
const DraftTTLDefault = 30 * 24 * time.Hour

// DraftKept is how long the form keeps a draft after its last save.
func (d *Definition) DraftKept() time.Duration {
	if d.DraftTTL != nil {
		return time.Duration(*d.DraftTTL)
	}
	return DraftTTLDefault
}
