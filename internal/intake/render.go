package intake

import (
	"encoding/hex"
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// Public statuses, as the status document shows them, beyond the store's
// own: processing (journaled, not decided) and received (journaled and
// decided, but not stored as an entry: spam, which is answered like a
// success so that bots learn little, without claiming it was stored).
const (
	statusProcessing = "processing"
	statusReceived   = "received"
)

// receivedFormat is fixed so that a replayed body is byte-for-byte the first.
const receivedFormat = "2006-01-02T15:04:05.000000Z07:00"

// statusDoc writes the status document: {"id","form","key","status",
// "received_at","receipt"}. The encoding is deterministic. strconv quoting
// is valid JSON here because ids, form ids and keys are visible ASCII.
func statusDoc(id, formID, key, status string, received time.Time, fingerprint [32]byte) []byte {
	b := make([]byte, 0, 256)
	b = append(b, `{"id":`...)
	b = strconv.AppendQuote(b, id)
	b = append(b, `,"form":`...)
	b = strconv.AppendQuote(b, formID)
	b = append(b, `,"key":`...)
	b = strconv.AppendQuote(b, key)
	b = append(b, `,"status":`...)
	b = strconv.AppendQuote(b, status)
	b = append(b, `,"received_at":"`...)
	b = received.UTC().AppendFormat(b, receivedFormat)
	b = append(b, `","receipt":"`...)
	b = hex.AppendEncode(b, fingerprint[:])
	return append(b, `"}`...)
}

// withIgnored adds to a status document the fields a value was sent for
// that were not stored (a field not shown): "ignored":[names], so nothing
// the person sent vanishes silently. The names come from the journaled
// data, so every answer for the key lists the same ones.
func withIgnored(doc []byte, ignored []string) []byte {
	if len(ignored) == 0 || len(doc) == 0 || doc[len(doc)-1] != '}' {
		return doc
	}
	b := append([]byte{}, doc[:len(doc)-1]...)
	b = append(b, `,"ignored":[`...)
	for i, n := range ignored {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendQuote(b, n)
	}
	return append(b, "]}"...)
}

// answer is a rendered outcome: what a POST answers for it.
type answer struct {
	status  int
	body    []byte
	problem *problem.Problem // set for error answers
	// replay marks an answer that is always a replay (a resend answered
	// as the entry it repeats).
	replay bool
}

// firstAnswer renders a decision as the POST that caused it answers, and as
// every retry of its key answers again (then with 200 for a 201, and the
// Idempotent-Replayed header). It depends only on what the store froze at
// decision time, so the bytes never change.
func firstAnswer(o store.Outcome) answer {
	if orig := o.SameAs; orig != nil {
		// A resend of a live entry's content under a new key is answered
		// with that entry's outcome, replayed, but under its own key, id
		// and time: the first entry's key would let whoever knows a
		// person's answers read (and follow) that person's status, and its
		// id and time tell when they registered. The outcome is all a new
		// key learns (DESIGN §4).
		return answer{status: 201, body: statusDoc(o.ID, o.Form, o.Key, publicDecision(orig.Decision), o.ReceivedAt, o.Fingerprint), replay: true}
	}
	switch o.Decision {
	case store.StatusStored, store.StatusWaitlisted, store.StatusPending:
		return answer{status: 201, body: statusDoc(o.ID, o.Form, o.Key, o.Decision, o.ReceivedAt, o.Fingerprint)}
	case store.StatusSpam:
		return answer{status: 201, body: statusDoc(o.ID, o.Form, o.Key, statusReceived, o.ReceivedAt, o.Fingerprint)}
	case store.StatusDuplicate:
		p := problem.New(problem.CodeDuplicateEntry, "this participant is already registered on this form")
		p.Key = o.Key
		return answer{status: p.Status, body: p.Body(), problem: p}
	case store.StatusRejected:
		p := problem.New(problem.CodeCapacityReached, "every place on this form is taken")
		if o.FullOption != "" {
			p = problem.New(problem.CodeCapacityReached, fmt.Sprintf("every place of option %q is taken", o.FullOption))
			p.Option = o.FullOption
		}
		p.Key = o.Key
		return answer{status: p.Status, body: p.Body(), problem: p}
	case store.StatusUploadUsed, store.StatusUploadMissing:
		p := uploadProblem(o)
		p.Key = o.Key
		return answer{status: p.Status, body: p.Body(), problem: p}
	case store.StatusChallengeInvalid:
		p := problem.New(problem.CodeChallengeInvalid, "this proof-of-work solution was used already by another submission (challenge-replayed): get a new challenge and send again under a new key")
		p.Key = o.Key
		return answer{status: p.Status, body: p.Body(), problem: p}
	default: // dead-lettered: durable in the journal, waiting for an operator
		return answer{status: 202, body: statusDoc(o.ID, o.Form, o.Key, statusProcessing, o.ReceivedAt, o.Fingerprint)}
	}
}

// uploadProblem is the answer to an entry its decision refused for an
// upload: what intake's check answered before the decision made it
// (DESIGN invariant 12) — 422 upload-already-used, or validation-failed
// naming the field with upload-not-found or upload-incomplete — with the
// field from the decision's detail. Entries decided by earlier releases
// have no detail: they keep their answer (no field named).
func uploadProblem(o store.Outcome) *problem.Problem {
	code, field, ok := store.ParseDetail(o.Detail)
	if !ok {
		if o.Decision == store.StatusUploadUsed {
			return problem.New(problem.CodeUploadUsed, "a file this submission names belongs to another submission")
		}
		return problem.New(problem.CodeUploadNotFound, "a file this submission names is not a complete upload of this form (it may have expired)")
	}
	var fe form.FieldError
	switch code {
	case store.UploadUsed:
		fe = form.FieldError{Field: field, Code: problem.CodeUploadUsed, Message: "names an upload another submission has: upload the file again"}
		p := problem.New(problem.CodeUploadUsed, fmt.Sprintf("field %s names a file another submission has", field))
		p.Errors = []form.FieldError{fe}
		return p
	case store.UploadIncomplete:
		fe = form.FieldError{Field: field, Code: code, Message: "names an upload whose bytes have not all arrived: finish the upload first"}
	default:
		fe = form.FieldError{Field: field, Code: problem.CodeUploadNotFound, Message: "names no upload of this field (it may have expired): upload the file again"}
	}
	return problem.From(&form.ValidationError{Errors: []form.FieldError{fe}})
}

// publicDecision is how a decision reads in a status document.
func publicDecision(d string) string {
	switch d {
	case store.StatusSpam:
		return statusReceived
	case store.StatusDeadLettered:
		return statusProcessing
	}
	return d
}

// publicStatus is the status the status endpoint shows now.
func publicStatus(o store.Outcome) string {
	if o.SameAs != nil {
		return publicDecision(o.SameAs.Decision)
	}
	return publicDecision(o.Status)
}

// currentDoc is the status document of a decided key now: its entry's
// present status (a waitlisted entry may have been promoted), or for a
// resend the present status of the entry it was answered as, under the
// resend's own key, id and time (see firstAnswer).
func currentDoc(o store.Outcome) []byte {
	return statusDoc(o.ID, o.Form, o.Key, publicStatus(o), o.ReceivedAt, o.Fingerprint)
}

func statusURL(formID, key string) string {
	return "/v1/forms/" + url.PathEscape(formID) + "/submissions/" + url.PathEscape(key)
}
