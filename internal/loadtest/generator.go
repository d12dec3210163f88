package loadtest

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// MaxPeople bounds the people of one run: person i's phone number is
// 138 followed by i in eight digits.
const MaxPeople = 100_000_000

// person is one distinct registrant. Person i is the same in every run,
// so that a failing run can be examined person by person.
type person struct {
	index   int
	name    string
	email   string
	mobile  string // the national number, 11 digits
	tickets int
	// session is the option a --sessions run's person chooses ("" for
	// none).
	session string
}

func newPerson(i int) person {
	return person{
		index:   i,
		name:    "Person " + strconv.Itoa(i),
		email:   "p" + strconv.Itoa(i) + "@example.org",
		mobile:  fmt.Sprintf("138%08d", i),
		tickets: 1 + i%4,
	}
}

// phoneStyles are ways people write the same CN mobile number; formd
// normalizes each to E.164 (+86138…), so they must all count as one
// person.
var phoneStyles = []func(m string) string{
	func(m string) string { return m },
	func(m string) string { return "+86 " + m[:3] + " " + m[3:7] + " " + m[7:] },
	func(m string) string { return "+86-" + m[:3] + "-" + m[3:7] + "-" + m[7:] },
	func(m string) string { return m[:3] + " " + m[3:7] + " " + m[7:] },
	func(m string) string { return "+86" + m },
	func(m string) string { return "(+86) " + m[:3] + "-" + m[3:7] + "-" + m[7:] },
}

// phone writes the person's number in style s.
func (p person) phone(s int) string {
	return phoneStyles[s%len(phoneStyles)](p.mobile)
}

// body is the person's submission with the phone written in style s:
// the payload formd, the ceiling and PocketBase all get.
func (p person) body(s int) []byte {
	if p.session != "" {
		return fmt.Appendf(nil, `{"name":%q,"phone":%q,"email":%q,"tickets":%d,"session":%q}`, p.name, p.phone(s), p.email, p.tickets, p.session)
	}
	return fmt.Appendf(nil, `{"name":%q,"phone":%q,"email":%q,"tickets":%d}`, p.name, p.phone(s), p.email, p.tickets)
}

// again is the person's second registration: the phone in style s and,
// when changed, another number of tickets.
func (p person) again(s int, changed bool) []byte {
	if changed {
		p.tickets = 1 + p.tickets%4
	}
	return p.body(s)
}

// invalidBodies are submissions the loadtest form must refuse with 422
// validation-failed; variant v of person i is one of them.
var invalidBodies = []func(p person) []byte{
	func(p person) []byte { // not a phone number
		return fmt.Appendf(nil, `{"name":%q,"phone":"12345","email":%q,"tickets":1}`, p.name, p.email)
	},
	func(p person) []byte { // name missing
		return fmt.Appendf(nil, `{"phone":%q,"email":%q,"tickets":1}`, p.phone(0), p.email)
	},
	func(p person) []byte { // tickets out of range
		return fmt.Appendf(nil, `{"name":%q,"phone":%q,"email":%q,"tickets":9}`, p.name, p.phone(0), p.email)
	},
	func(p person) []byte { // not an e-mail address
		return fmt.Appendf(nil, `{"name":%q,"phone":%q,"email":"nobody","tickets":2}`, p.name, p.phone(0))
	},
}

// plan is what one virtual person does: chosen from the shares with a
// generator seeded by the run's seed and the person, so the same seed
// gives the same plans.
type plan struct {
	person      person
	style       int  // how the first submission writes the phone
	invalid     bool // one invalid submission, nothing else
	doubleClick bool // the first submission is sent twice at once
	reregister  bool // the person registers again with a new key and another phone style
	reStyle     int
	// reChanged: the second registration also asks for another number of
	// tickets (a 409 for one of the two keys); otherwise it is the same
	// content, which the server answers as the first (a resend).
	reChanged bool
}

// Shares are the parts of the people that do something besides one clean
// registration; each is in [0, 1].
type Shares struct {
	// DoubleClick: the same submission (same key, same bytes) sent twice
	// at the same moment.
	DoubleClick float64 `json:"double_click"`
	// Reregister: the same person registering again at about the same
	// moment, with a new key and the phone number written another way;
	// half of them with the same content (answered as the first entry),
	// half asking for another number of tickets (already registered).
	Reregister float64 `json:"reregister"`
	// Invalid: a submission the form must refuse (422), from a person who
	// sends nothing else.
	Invalid float64 `json:"invalid"`
}

func makePlan(seed uint64, i int, sh Shares) plan {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	p := plan{person: newPerson(i), style: r.IntN(len(phoneStyles))}
	if r.Float64() < sh.Invalid {
		p.invalid = true
		return p
	}
	p.doubleClick = r.Float64() < sh.DoubleClick
	p.reregister = r.Float64() < sh.Reregister
	p.reStyle = (p.style + 1 + r.IntN(len(phoneStyles)-1)) % len(phoneStyles)
	p.reChanged = r.IntN(2) == 0
	return p
}

// sessionsOf are a --sessions run's options: s1…sN sharing the capacity
// (the first ones get the remainder).
func sessionsOf(n, capacity int) []sessionPlaces {
	out := make([]sessionPlaces, n)
	for i := range out {
		out[i] = sessionPlaces{Value: "s" + strconv.Itoa(i+1), Capacity: capacity / n}
		if i < capacity%n {
			out[i].Capacity++
		}
	}
	return out
}

// loadtestForm is the form a run registers people into. With sessions,
// a select field whose options have the places, instead of the form.
func loadtestForm(id string, capacity int, whenFull string, sessions ...sessionPlaces) string {
	if len(sessions) > 0 {
		var opts strings.Builder
		for _, s := range sessions {
			fmt.Fprintf(&opts, "      - {value: %s, capacity: %d}\n", s.Value, s.Capacity)
		}
		return fmt.Sprintf(`id: %s
title: formd loadtest %s (sessions)
fields:
  - {name: name,    type: text,   required: true, max: 100}
  - {name: phone,   type: phone,  required: true, region: CN}
  - {name: email,   type: email,  required: true}
  - {name: tickets, type: number, required: true, min: 1, max: 4, integer: true}
  - name: session
    type: select
    options:
%sunique: [[phone]]
when_full: %s
require_key: true
rate_limit: off
`, id, id, opts.String(), whenFull)
	}
	return fmt.Sprintf(`id: %s
title: formd loadtest %s
fields:
  - {name: name,    type: text,   required: true, max: 100}
  - {name: phone,   type: phone,  required: true, region: CN}
  - {name: email,   type: email,  required: true}
  - {name: tickets, type: number, required: true, min: 1, max: 4, integer: true}
unique: [[phone]]
capacity: %d
when_full: %s
require_key: true
rate_limit: off
`, id, id, capacity, whenFull)
}
