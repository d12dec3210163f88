package client

import (
	"errors"
	"fmt"
	"time"
)

// Outcome is the definitive answer to a submission: once Submit returns
// one, sending the submission again cannot change it.
type Outcome string

// The outcomes, with the state a form should show the person.
const (
	// Stored: the submission holds a place ("received").
	Stored Outcome = "stored"
	// Waitlisted: the submission is on the waitlist ("received"; the
	// form was full).
	Waitlisted Outcome = "waitlisted"
	// Cancelled: the submission was stored and later cancelled by the
	// form's owner.
	Cancelled Outcome = "cancelled"
	// AlreadyRegistered: 409 duplicate-entry; this participant already
	// has a live entry on the form, made with another key ("already
	// registered"). Nothing new was stored.
	AlreadyRegistered Outcome = "already-registered"
	// Full: 409 capacity-reached; every place is taken and the form has
	// no waitlist.
	Full Outcome = "full"
	// Closed: 410 form-closed; the form is not open.
	Closed Outcome = "closed"
	// Invalid: 422 validation-failed; Result.Problem.Errors names each
	// field that needs a fix ("needs a fix"). Nothing was recorded, so
	// the corrected submission may use a new key.
	Invalid Outcome = "invalid"
	// KeyReused: 422 idempotency-key-reused; the key was already used for
	// different content. A bug in the caller: one key, one submission.
	KeyReused Outcome = "key-reused"
	// FormNotFound: 404 form-not-found.
	FormNotFound Outcome = "form-not-found"
	// Refused: any other refusal that sending again cannot fix (400, 403,
	// 413, 415 and unknown 4xx answers); see Result.Problem.
	Refused Outcome = "refused"
)

// Live reports whether the outcome is an entry that holds a place or a
// waitlist position.
func (o Outcome) Live() bool { return o == Stored || o == Waitlisted }

// Result is what Submit learned about a submission.
type Result struct {
	// Form and Key identify the submission.
	Form, Key string
	// Outcome is the definitive answer; empty only in the Result carried
	// by a NotDecidedError.
	Outcome Outcome
	// HTTPStatus is the status of the answer that decided the outcome (a
	// status query's 200 when the decision came from one).
	HTTPStatus int
	// Doc is the status document of a stored, waitlisted or cancelled
	// submission (and of a processing one, while it is not decided).
	Doc *StatusDoc
	// Problem is the problem document of a refusal.
	Problem *Problem
	// Replayed is true when the server answered with the first answer to
	// this key again (Idempotent-Replayed: true): an earlier attempt had
	// reached it.
	Replayed bool
	// Acknowledged is true once the server has said it holds the
	// submission durably in its journal: a 201, 200 or 202 answer, a 409
	// decision, or a status document for the key.
	Acknowledged bool
	// Forgotten is true when the server, after acknowledging the
	// submission durably (not the early 202 of an async form), answered a
	// status query with 404 submission-not-found.
	// That breaks the server's durable-ack promise; the client sends the
	// submission again, and loadtest counts it as a loss.
	Forgotten bool
	// Attempts is the number of POSTs sent; StatusQueries the number of
	// status requests.
	Attempts, StatusQueries int
	// Started is when the first attempt began; AcknowledgedAt when the
	// first acknowledgement arrived; DecidedAt when the outcome did.
	Started, AcknowledgedAt, DecidedAt time.Time

	// durable is false after an async form's early 202.
	durable bool
}

// StatusDoc is the server's status document:
// {"id","form","key","status","received_at","receipt"}.
type StatusDoc struct {
	ID     string `json:"id"`
	Form   string `json:"form"`
	Key    string `json:"key"`
	Status string `json:"status"`
	// ReceivedAt is when the server journaled the submission.
	ReceivedAt time.Time `json:"received_at"`
	// Receipt is the hex SHA-256 fingerprint of what the server received,
	// so the submitter can prove what was sent.
	Receipt string `json:"receipt"`
}

// Problem is an RFC 9457 problem document as formd writes it.
type Problem struct {
	Type   string       `json:"type"`
	Title  string       `json:"title"`
	Status int          `json:"status"`
	Detail string       `json:"detail,omitempty"`
	Code   string       `json:"code"`
	Key    string       `json:"key,omitempty"`
	Errors []FieldError `json:"errors,omitempty"`
}

// FieldError is one field that needs a fix, with a stable code.
type FieldError struct {
	Field   string `json:"field"`
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Problem codes that the client acts on.
const (
	CodeDuplicateEntry     = "duplicate-entry"
	CodeCapacityReached    = "capacity-reached"
	CodeFormClosed         = "form-closed"
	CodeValidationFailed   = "validation-failed"
	CodeKeyReused          = "idempotency-key-reused"
	CodeFormNotFound       = "form-not-found"
	CodeSubmissionNotFound = "submission-not-found"
)

// ErrNotDecided is wrapped by the error Submit returns when its context
// ends before a definitive answer.
var ErrNotDecided = errors.New("submission not decided")

// NotDecidedError says that Submit stopped (its context ended) before the
// server gave a definitive answer. Result says how far it got: when
// Result.Acknowledged is true the server holds the submission and will
// decide it ("received"); otherwise it may never have arrived, and the
// outbox, if any, still holds it ("saved on this device").
type NotDecidedError struct {
	Result Result
	// Err is why Submit stopped, usually the context's error.
	Err error
}

func (e *NotDecidedError) Error() string {
	state := "not acknowledged"
	if e.Result.Acknowledged {
		state = "acknowledged, outcome pending"
	}
	return fmt.Sprintf("submit %s/%s: %s after %d attempts: %v", e.Result.Form, e.Result.Key, state, e.Result.Attempts, e.Err)
}

// Unwrap lets errors.Is find ErrNotDecided and the cause.
func (e *NotDecidedError) Unwrap() []error { return []error{ErrNotDecided, e.Err} }
