package loadtest

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sort"

	"github.com/formd/formd/client"
)

// Definitions are what the checker counts, word for word as the help and
// the report state them.
const (
	DefSubmitted    = "distinct idempotency keys the virtual clients sent (a double click sends one key twice)"
	DefAcknowledged = "keys the server confirmed it holds durably: a 201, 200 or 202 answer, a 409 decision, or a status document for the key"
	DefStored       = "live entries in the export: stored + waitlisted (a waitlisted person is registered, not lost)"
	DefLost         = "keys the server acknowledged, or answered stored/waitlisted/already-registered, that have no live entry at the end: answered stored or waitlisted but not live in the store; answered already-registered while the person has no live entry under any key (a 409 because the person's own other key won is not lost); acknowledged, then unknown (404) to a status query or absent from both the store and the journal"
	DefDuplicated   = "extra entries: every entry beyond the first for one key, plus every live entry beyond the first for one person (their phone, however written)"
	DefOversold     = "entries with status stored beyond the form's capacity (with --sessions, beyond a session's places)"
	DefUnresolved   = "keys with no definitive answer by the end of the grace period that the store has not decided either: still processing, dead-lettered, or never acknowledged and absent"
	DefViolations   = "anything else that breaks the contract: invalid input stored or accepted, two sends of one key answered differently, an answer the store contradicts, an entry no client sent, a valid registration refused, capacity-reached while places were free"
)

// exportRow is one line of the admin export (jsonl).
type exportRow struct {
	Key    string `json:"key"`
	Status string `json:"status"`
	// Data holds the session a --sessions run's entry chose.
	Data struct {
		Session string `json:"session"`
	} `json:"data"`
}

// sessionPlaces is one option of a --sessions run's form: its value and
// its places. Person i chooses session i mod the number of sessions.
type sessionPlaces struct {
	Value    string
	Capacity int
}

// fetchExport reads every entry of the form through the admin API.
func fetchExport(ctx context.Context, hc *http.Client, base, token, form string) ([]exportRow, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/admin/forms/"+url.PathEscape(form)+"/export?format=jsonl", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("export %s: %w", form, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("export %s: %s", form, resp.Status)
	}
	var rows []exportRow
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		if len(sc.Bytes()) == 0 {
			continue
		}
		var r exportRow
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("export %s: line %d: %w", form, len(rows)+1, err)
		}
		rows = append(rows, r)
	}
	if err := sc.Err(); err != nil {
		// A cut export must not pass for a short one.
		return nil, fmt.Errorf("export %s: read: %w", form, err)
	}
	return rows, nil
}

// Verdict is what the checker found.
type Verdict struct {
	Submitted    int            `json:"submitted"`
	People       int            `json:"people"`
	Acknowledged int            `json:"acknowledged"`
	Decided      int            `json:"decided"`
	Stored       int            `json:"stored"`
	ByStatus     map[string]int `json:"store_by_status"`
	Refused      Refusals       `json:"expected_refusals"`
	Lost         int            `json:"lost"`
	Duplicated   int            `json:"duplicated"`
	Oversold     int            `json:"oversold"`
	Unresolved   int            `json:"unresolved"`
	Violations   int            `json:"violations"`
	// Late counts keys whose client gave up before the answer while the
	// store decided them all the same: not failures.
	Late int `json:"late"`
	// Why breaks the failures down by reason.
	Why map[string]int `json:"why,omitempty"`
	// Examples names up to five keys per reason, to look up in the
	// server's export or audit.
	Examples map[string][]string `json:"examples,omitempty"`
}

// Refusals are the answers that are not failures: the form did what it
// promises.
type Refusals struct {
	AlreadyRegistered int `json:"already_registered"`
	Full              int `json:"full"`
	Invalid           int `json:"invalid"`
}

// statusOf is the server's answer to a final status query for a key that
// was acknowledged, not decided, and is not in the export.
type statusOf map[string]string

const (
	finalProcessing = "processing"
	finalNotFound   = "not-found"
	finalError      = "error"
)

func liveStatus(s string) bool { return s == "stored" || s == "waitlisted" }

// verdict compares what the clients were told with what the store holds.
// It is a pure function of its inputs so that tests can hand it any
// story.
// With sessions (a --sessions run), no session may hold more stored
// entries than its places, and a full answer while the person's session
// had places is a violation.
func verdict(records []*record, rows []exportRow, capacity int, whenFull string, final statusOf, sessions ...sessionPlaces) Verdict {
	v := Verdict{ByStatus: map[string]int{}, Why: map[string]int{}, Examples: map[string][]string{}}
	note := func(counter *int, why, key string) {
		*counter++
		v.Why[why]++
		if len(v.Examples[why]) < 5 {
			v.Examples[why] = append(v.Examples[why], key)
		}
	}

	rowsByKey := map[string][]exportRow{}
	for _, r := range rows {
		rowsByKey[r.Key] = append(rowsByKey[r.Key], r)
		v.ByStatus[r.Status]++
		if liveStatus(r.Status) {
			v.Stored++
		}
	}
	byKey := map[string]*record{}
	people := map[int]bool{}
	for _, r := range records {
		byKey[r.key] = r
		people[r.person] = true
	}
	v.People = len(people)

	// Live entries per person, by the ledger's key → person, so that the
	// count does not depend on the server's own phone normalization.
	livePerPerson := map[int]int{}
	for key, rs := range rowsByKey {
		if len(rs) > 1 {
			for range rs[1:] {
				note(&v.Duplicated, "more than one entry for a key", key)
			}
		}
		r, known := byKey[key]
		if !known {
			note(&v.Violations, "an entry no client sent", key)
			continue
		}
		for _, row := range rs {
			if liveStatus(row.Status) {
				if r.invalid {
					note(&v.Violations, "invalid input stored", key)
					continue
				}
				livePerPerson[r.person]++
			}
		}
	}
	for p, n := range livePerPerson {
		for range max(n-1, 0) {
			note(&v.Duplicated, "more than one live entry for a person", fmt.Sprintf("p%d", p))
		}
	}
	storedIn := map[string]int{}
	for _, r := range rows {
		if r.Status == "stored" {
			storedIn[r.Data.Session]++
		}
	}
	if len(sessions) > 0 {
		for _, s := range sessions {
			if n := storedIn[s.Value]; n > s.Capacity {
				v.Oversold += n - s.Capacity
				v.Why["stored beyond a session's places"] += n - s.Capacity
			}
		}
	} else if n := v.ByStatus["stored"]; n > capacity {
		v.Oversold = n - capacity
		v.Why["stored beyond capacity"] = v.Oversold
	}
	fullIn := map[string]int{}

	keys := make([]string, 0, len(records))
	for _, r := range records {
		keys = append(keys, r.key)
	}
	sort.Strings(keys)
	fullAnswers := 0
	for _, key := range keys {
		r := byKey[key]
		v.Submitted++
		r.mu.Lock()
		calls := append([]call(nil), r.calls...)
		r.mu.Unlock()
		var outcomes []client.Outcome
		acked, forgotten := false, false
		answeredAs := ""
		for _, c := range calls {
			acked = acked || c.acked
			forgotten = forgotten || c.forgotten
			if c.answeredAs != "" {
				answeredAs = c.answeredAs
			}
			if c.outcome != "" {
				outcomes = append(outcomes, c.outcome)
			}
		}
		if acked {
			v.Acknowledged++
		}
		if len(outcomes) > 0 {
			v.Decided++
		}
		for _, o := range outcomes[min(1, len(outcomes)):] {
			if o != outcomes[0] {
				note(&v.Violations, "one key answered differently", key)
				break
			}
		}
		rs := rowsByKey[key]
		if answeredAs != "" {
			// Answered as another key's entry: that entry must be live.
			rs = rowsByKey[answeredAs]
		}
		live, cancelled := false, false
		for _, row := range rs {
			live = live || liveStatus(row.Status)
			cancelled = cancelled || row.Status == "cancelled"
		}
		if r.invalid {
			switch {
			case len(outcomes) == 0:
				note(&v.Unresolved, "invalid input never answered", key)
			case outcomes[0] == client.Invalid:
				v.Refused.Invalid++
			default:
				note(&v.Violations, "invalid input accepted", key)
			}
			continue
		}
		personLive := livePerPerson[r.person] > 0
		// A resend of the person's content under a new key is decided
		// duplicate and answered with the outcome of the entry holding the
		// place, under its own key (the server never names the other key):
		// that entry is the person's live one.
		resend := answeredAs == "" && len(rs) > 0 && rs[0].Status == "duplicate"
		var first client.Outcome
		if len(outcomes) > 0 {
			first = outcomes[0]
		}
		switch {
		case forgotten:
			note(&v.Lost, "acknowledged, then unknown to a status query", key)
		case first.Live() && !live && !cancelled && !(resend && personLive):
			note(&v.Lost, "answered stored or waitlisted, not live in the store", key)
		case first == client.AlreadyRegistered && !personLive:
			note(&v.Lost, "answered already-registered, the person has no live entry", key)
		case first == client.AlreadyRegistered || first == client.Full:
			if live {
				note(&v.Violations, "answered "+string(first)+", stored all the same", key)
			}
			if first == client.AlreadyRegistered {
				v.Refused.AlreadyRegistered++
			} else {
				v.Refused.Full++
				fullAnswers++
				if len(sessions) > 0 {
					fullIn[sessions[r.person%len(sessions)].Value]++
				}
			}
		case first == "":
			// The client gave up waiting; the store may still have
			// decided it.
			switch {
			case len(rs) > 0 && rs[0].Status == "duplicate" && !personLive:
				note(&v.Lost, "decided duplicate, the person has no live entry", key)
			case len(rs) > 0 && rs[0].Status == "dead-lettered":
				note(&v.Unresolved, "dead-lettered", key)
			case len(rs) > 0:
				v.Late++
			case acked && final[key] == finalNotFound:
				note(&v.Lost, "acknowledged, absent from the store and the journal", key)
			case acked:
				note(&v.Unresolved, "acknowledged, still processing", key)
			default:
				note(&v.Unresolved, "never acknowledged", key)
			}
		case first == client.Cancelled:
			// Stored, then cancelled by someone: not the loadtest's doing,
			// and not a loss.
		case !first.Live():
			note(&v.Violations, "valid registration refused: "+string(first), key)
		}
	}
	for _, s := range sessions {
		if whenFull == "reject" && fullIn[s.Value] > 0 && storedIn[s.Value] < s.Capacity {
			v.Violations += fullIn[s.Value]
			v.Why["capacity-reached while the session had places"] += fullIn[s.Value]
		}
	}
	if len(sessions) == 0 && whenFull == "reject" && fullAnswers > 0 && v.ByStatus["stored"] < capacity {
		v.Violations += fullAnswers
		v.Why["capacity-reached while places were free"] = fullAnswers
	}
	if len(v.Why) == 0 {
		v.Why = nil
		v.Examples = nil
	}
	return v
}

// finalStatuses asks the server, for each acknowledged key that has no
// answer and no entry in the export, whether it still knows the key: a
// key the server acknowledged and no longer knows is lost, one it is
// still processing is unresolved.
func (p *formdProtocol) finalStatuses(ctx context.Context, rows []exportRow) (statusOf, error) {
	inExport := map[string]bool{}
	for _, r := range rows {
		inExport[r.Key] = true
	}
	direct, err := client.New(p.serverBase, client.Options{HTTPClient: p.admin})
	if err != nil {
		return nil, err
	}
	out := statusOf{}
	for _, r := range p.e.records {
		r.mu.Lock()
		acked, decided := false, false
		for _, c := range r.calls {
			acked = acked || c.acked
			decided = decided || c.outcome != ""
		}
		r.mu.Unlock()
		if !acked || decided || inExport[r.key] {
			continue
		}
		doc, err := direct.Status(ctx, p.form, r.key)
		var se *client.StatusError
		switch {
		case err == nil && doc.Status == "processing":
			out[r.key] = finalProcessing
		case err == nil:
			// Decided between the export and now: read as processing,
			// it was not in the export this verdict is made from.
			out[r.key] = finalProcessing
		case errors.As(err, &se) && se.Problem.Code == client.CodeSubmissionNotFound:
			out[r.key] = finalNotFound
		default:
			out[r.key] = finalError
		}
	}
	return out, nil
}
