package intake

import (
	"encoding/hex"
	"github.com/formd/formd/internal/problem"
	"net/url"
	"strconv"
	"time"

	"github.com/formd/formd/internal/store"
)

// Public statuses, as the status document shows them.
const (
	statusProcessing = "processing"
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

// answer is a rendered outcome: what a POST answers for it.
type answer struct {
	status  int
	body    []byte
	problem *problem.Problem // set for error answers
}

// firstAnswer renders a decision as the POST that caused it answers, and as
// every retry of its key answers again (then with 200 for a 201, and the
// Idempotent-Replayed header). It depends only on what the store froze at
// decision time, so the bytes never change.
func firstAnswer(o store.Outcome) answer {
	switch o.Decision {
	case store.StatusStored, store.StatusWaitlisted:
		return answer{status: 201, body: statusDoc(o.ID, o.Form, o.Key, o.Decision, o.ReceivedAt, o.Fingerprint)}
	case store.StatusSpam:
		// Spam is answered like a success so that bots learn nothing.
		return answer{status: 201, body: statusDoc(o.ID, o.Form, o.Key, store.StatusStored, o.ReceivedAt, o.Fingerprint)}
	case store.StatusDuplicate:
		p := problem.New(problem.CodeDuplicateEntry, "this participant is already registered on this form")
		p.Key = o.Key
		return answer{status: p.Status, body: p.Body(), problem: p}
	case store.StatusRejected:
		p := problem.New(problem.CodeCapacityReached, "every place on this form is taken")
		p.Key = o.Key
		return answer{status: p.Status, body: p.Body(), problem: p}
	default: // dead-lettered: durable in the journal, waiting for an operator
		return answer{status: 202, body: statusDoc(o.ID, o.Form, o.Key, statusProcessing, o.ReceivedAt, o.Fingerprint)}
	}
}

// publicStatus is the status the status endpoint shows now.
func publicStatus(o store.Outcome) string {
	switch o.Status {
	case store.StatusSpam:
		return store.StatusStored
	case store.StatusDeadLettered:
		return statusProcessing
	}
	return o.Status
}

func statusURL(formID, key string) string {
	return "/v1/forms/" + url.PathEscape(formID) + "/submissions/" + url.PathEscape(key)
}
