// Package problem is formd's error vocabulary on HTTP: RFC 9457 problem
// documents with a stable code, the one mapping from Go errors to them, and
// the pages at /problems/{code} that explain each code to people.
package problem

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net/http"
	"strconv"
	"strings"

	"github.com/formd/formd/internal/form"
)

// Problem codes: stable, machine-readable, documented at /problems/{code}.
const (
	CodeInvalidRequest       = "invalid-request"
	CodeKeyMissing           = "idempotency-key-missing"
	CodeFormNotFound         = "form-not-found"
	CodeDuplicateEntry       = "duplicate-entry"
	CodeCapacityReached      = "capacity-reached"
	CodeFormClosed           = "form-closed"
	CodePayloadTooLarge      = "payload-too-large"
	CodeUnsupportedMediaType = "unsupported-media-type"
	CodeValidationFailed     = "validation-failed"
	CodeKeyReused            = "idempotency-key-reused"
	CodeRateLimited          = "rate-limited"
	CodeOverloaded           = "overloaded"
	CodeJournalUnavailable   = "journal-unavailable"
	CodeStoreUnavailable     = "store-unavailable"
	CodeSubmissionNotFound   = "submission-not-found"
	CodeOriginNotAllowed     = "origin-not-allowed"
	CodeUnauthorized         = "unauthorized"
	CodeNotFound             = "not-found"
	CodeMethodNotAllowed     = "method-not-allowed"
	CodeInternal             = "internal-error"
	CodeInvalidDefinition    = "invalid-form-definition"
	CodeEntryNotFound        = "entry-not-found"
	CodeEntryNotLive         = "entry-not-live"
	CodeEntryPending         = "entry-pending"
	CodeEntryNotSpam         = "entry-not-spam"
	CodeEntryNotPending      = "entry-not-pending"
	CodeForbidden            = "forbidden"
	CodeInvalidCredentials   = "invalid-credentials"
	CodeLoginLocked          = "login-locked"
	CodeCSRFFailed           = "csrf-failed"
	CodeAccountNotFound      = "account-not-found"
	CodeEmailTaken           = "email-taken"
	CodeInvalidAccount       = "invalid-account"
	CodeSetupInvalid         = "setup-invalid"
	CodeSetupDone            = "setup-done"
	CodeTokenRevoked         = "token-revoked"
	CodeResetInvalid         = "reset-invalid"
	CodeJobRunning           = "job-running"
	// Single sign-on (OpenID Connect) and the password switch.
	CodeSSOFailed      = "sso-failed"
	CodeSSOUnavailable = "sso-unavailable"
	CodeSSONoAccess    = "sso-no-access"
	CodePasswordsOff   = "password-sign-in-off"
	// Uploads (a file field's bytes).
	CodeFileRejected      = "file-rejected"
	CodeUploadUsed        = "upload-already-used"
	CodeUploadNotFound    = "upload-not-found"
	CodeUploadOffset      = "upload-offset-mismatch"
	CodeUploadUnavailable = "upload-unavailable"
	CodeFileErased        = "file-erased"
	// Upload safety (--clamd).
	CodeFileInfected    = "file-infected"
	CodeScanUnavailable = "scan-unavailable"
	// Proof-of-work (a form's spam.challenge).
	CodeChallengeRequired = "challenge-required"
	CodeChallengeInvalid  = "challenge-invalid"
	// Upload storage.
	CodeUploadStorageFull = "upload-storage-full"
	CodeUploadBudget      = "upload-budget-spent"
	// Building forms (the admin API's and the console's).
	CodeFormExists           = "form-exists"
	CodeVersionNotFound      = "form-version-not-found"
	CodeConfirmationRequired = "confirmation-required"
	CodeFormNotEmpty         = "form-not-empty"
	CodeDeleteUnconfirmed    = "form-delete-unconfirmed"
	CodeFormBusy             = "form-busy"
	// Drafts and the participant's link (issue 33).
	CodeDraftNotFound     = "draft-not-found"
	CodeDraftExists       = "draft-exists"
	CodeDraftStale        = "draft-version-mismatch"
	CodeDraftSubmitted    = "draft-submitted"
	CodeDraftsDisabled    = "drafts-disabled"
	CodeEntryLinkNotFound = "entry-link-not-found"
	// E-mailing a draft's resume link.
	CodeDraftNoEmail       = "draft-no-email"
	CodeEmailNotConfigured = "email-not-configured"
	CodeDraftEmailLimited  = "draft-email-limited"
	CodeDraftEmailFailed   = "draft-email-failed"
	// A participant's change (issue 33 item 3).
	CodeEntryStale      = "entry-version-mismatch"
	CodeIfMatchRequired = "if-match-required"
	CodeEditClosed      = "edit-closed"

	CodeTicketInvalid     = "ticket-invalid"
	CodeTicketNotValidNow = "ticket-not-valid-now"
)

// Info describes a code for people: the title that goes in every
// problem document and the explanation served at /problems/{code}.
type Info struct {
	Status  int
	Title   string
	Explain string
	// RetryAfter, when set, is the Retry-After (seconds) every answer with
	// this code carries.
	RetryAfter int
}

// Codes is every code formd answers with.
var Codes = map[string]Info{
	CodeInvalidRequest:       {Status: 400, Title: "Invalid request", Explain: "The request could not be read: a malformed body, a bad Idempotency-Key (it must be 1 to 255 visible ASCII characters, or an RFC 8941 quoted string of them) or a bad Prefer header. Fix the request; sending it again unchanged will fail again."},
	CodeKeyMissing:           {Status: 400, Title: "Idempotency key missing", Explain: "This form requires every submission to carry an idempotency key: an Idempotency-Key header, or a _key field for plain HTML forms. Generate one random key per submission and reuse it for every retry of that submission."},
	CodeFormNotFound:         {Status: 404, Title: "Form not found", Explain: "No form has this id on this server. Check the form id in the URL."},
	CodeDuplicateEntry:       {Status: 409, Title: "Already registered", Explain: "This participant is already registered on this form (the form's unique fields, such as the phone number, match a live entry). Nothing new was stored. For privacy the answer does not say which entry matched."},
	CodeCapacityReached:      {Status: 409, Title: "Form is full", Explain: "Every place on this form is taken and the form has no waitlist; or, when the answer names an option, every place of that option (a session with places of its own) is taken. Nothing was stored: another option with places left may be chosen."},
	CodeFormClosed:           {Status: 410, Title: "Form closed", Explain: "The form is not taking submissions: it has not opened yet or it has closed. Nothing was stored."},
	CodePayloadTooLarge:      {Status: 413, Title: "Payload too large", Explain: "The body is larger than this server accepts. Nothing was stored."},
	CodeUnsupportedMediaType: {Status: 415, Title: "Unsupported media type", Explain: "Send application/json, application/x-www-form-urlencoded or multipart/form-data (without files)."},
	CodeValidationFailed:     {Status: 422, Title: "Validation failed", Explain: "Some fields need a fix; the errors list names each field with a stable code. Nothing was stored. Correct the fields and submit again (a new key is fine: nothing was recorded under the old one)."},
	CodeKeyReused:            {Status: 422, Title: "Idempotency key reused", Explain: "This idempotency key was already used for a submission with different content. A key identifies one submission: generate a new key for new content."},
	CodeRateLimited:          {Status: 429, Title: "Too many requests", Explain: "This client sent more submissions to this form than the server allows in a short time. Wait for Retry-After seconds and send the same submission again with the same key."},
	CodeOverloaded:           {Status: 503, Title: "Server busy", Explain: "The server's queue is full, so it refused the submission before writing anything. Send it again with the same key after Retry-After seconds.", RetryAfter: 1},
	CodeJournalUnavailable:   {Status: 503, Title: "Journal unavailable", Explain: "The server could not write the submission durably, so nothing was acknowledged. Send it again with the same key after Retry-After seconds.", RetryAfter: 2},
	CodeStoreUnavailable:     {Status: 503, Title: "Store unavailable", Explain: "The server could not read or write the store to answer this request; nothing was changed. Try again after Retry-After seconds.", RetryAfter: 2},
	CodeSubmissionNotFound:   {Status: 404, Title: "Submission not found", Explain: "No submission with this key was received for this form. If you sent it and got no answer, send it again with the same key."},
	CodeOriginNotAllowed:     {Status: 403, Title: "Origin not allowed", Explain: "This form does not accept submissions from the page's origin. The form owner lists allowed origins under origins: in the form definition."},
	CodeUnauthorized:         {Status: 401, Title: "Unauthorized", Explain: "This endpoint needs the admin token: send Authorization: Bearer <token>. The token is printed once when formd first starts; make a new one with formd token."},
	CodeNotFound:             {Status: 404, Title: "Not found", Explain: "There is nothing at this address."},
	CodeMethodNotAllowed:     {Status: 405, Title: "Method not allowed", Explain: "This address does not take that method."},
	CodeInvalidDefinition:    {Status: 422, Title: "Invalid form definition", Explain: "The form definitions were refused; the detail names each form, field and problem with what would be valid. Nothing was applied."},
	CodeEntryNotFound:        {Status: 404, Title: "Entry not found", Explain: "No entry (or dead letter) with this id or key exists on this form."},
	CodeEntryNotLive:         {Status: 409, Title: "Entry not live", Explain: "Only stored or waitlisted entries can be cancelled or marked as spam; this one is not."},
	CodeEntryNotSpam:         {Status: 409, Title: "Entry not spam", Explain: "Only an entry classed as spam, with its data, can be decided again as a real submission."},
	CodeEntryNotPending:      {Status: 409, Title: "Entry already reviewed", Explain: "Only an entry pending review can be approved or declined, once: this one was approved or declined already (perhaps by another editor a moment ago), or its form has no review. Nothing changed."},
	CodeEntryPending:         {Status: 409, Title: "Entry still being processed", Explain: "The entry is journaled but not decided yet, so it cannot be changed now. Try again in a moment.", RetryAfter: 1},
	CodeForbidden:            {Status: 403, Title: "Forbidden", Explain: "Your account may not do this: its role or its sites do not allow it."},
	CodeInvalidCredentials:   {Status: 401, Title: "Sign-in failed", Explain: "The e-mail or the password is wrong. After a few failures in a row, sign-ins for the same account from the same address are slowed (each waits twice as long as the last); sign-ins from other addresses are not."},
	CodeLoginLocked:          {Status: 429, Title: "Too many sign-ins", Explain: "Too many sign-ins for this account from this address came too fast, or this address made too many for any accounts. Wait for Retry-After seconds, then try again; from another address the account is not slowed.", RetryAfter: 60},
	CodeCSRFFailed:           {Status: 403, Title: "Stale form", Explain: "A change sent from a signed-in browser must carry the console's CSRF token: reload the page and try again."},
	CodeAccountNotFound:      {Status: 404, Title: "Account not found", Explain: "No account or token has this id or e-mail."},
	CodeEmailTaken:           {Status: 409, Title: "E-mail taken", Explain: "An account with this e-mail already exists."},
	CodeInvalidAccount:       {Status: 422, Title: "Invalid account", Explain: "The e-mail, password, role or sites of the account are not valid; the detail says which and what would be."},
	CodeSetupInvalid:         {Status: 400, Title: "Setup link not valid", Explain: "The setup link is wrong, used or expired. On the server, formd setup-link makes a new one (an expired one is also replaced at the next start), or make the first account with formd users add."},
	CodeSetupDone:            {Status: 409, Title: "Already set up", Explain: "formd already has an account: sign in, or ask an owner for an account."},
	CodeTokenRevoked:         {Status: 409, Title: "Token revoked", Explain: "This API token was revoked already."},
	CodeResetInvalid:         {Status: 400, Title: "Reset link not valid", Explain: "The password reset link is wrong, used or expired (it works once, for a few hours). Ask an owner for a new one; on the server, formd users passwd --email sets a password."},
	CodeJobRunning:           {Status: 409, Title: "Job already running", Explain: "You already have an audit running (one per account at a time, of any form): follow it on its job page, or wait for it to finish before starting another.", RetryAfter: 5},
	CodeSSOFailed:            {Status: 400, Title: "Single sign-on failed", Explain: "The sign-in through the identity provider could not be completed: it was not started in this browser or took too long, its state did not match, the provider refused the code (a code works once), or the ID token it gave is not valid for this server (another client's, expired, or with the wrong nonce). Nothing was signed in; start again from the sign-in page."},
	CodeSSOUnavailable:       {Status: 502, Title: "Identity provider unavailable", Explain: "formd could not reach the identity provider to finish the sign-in. Try again in a moment; an owner with a password (the break-glass account) can still sign in with it."},
	CodeSSONoAccess:          {Status: 403, Title: "No access", Explain: "The identity provider signed you in, but formd gives you nothing: no rule of the owner's claim mapping matches your groups or roles, your e-mail is not verified, or no account has your e-mail and new accounts are not made on first sign-in. Ask an owner to add you to a group the mapping names, or to make your account."},
	CodePasswordsOff:         {Status: 403, Title: "Password sign-in is off", Explain: "This server signs people in through its identity provider only: use the single sign-on button. Only the break-glass owner may still sign in with a password."},
	CodeFileRejected:         {Status: 422, Title: "File rejected", Explain: "The uploaded file's bytes are of a type the form's file field does not accept (the type is found from the bytes, not from the file's name), or the upload names no file field of this form. The detail names the field and the type found. The upload was deleted; send a file of an accepted type."},
	CodeUploadUsed:           {Status: 422, Title: "Upload already used", Explain: "An upload this submission names belongs to another submission already: an upload is attached to one entry only. Upload the file again for this submission. Nothing was stored."},
	CodeUploadNotFound:       {Status: 422, Title: "Upload not found", Explain: "No complete upload of this form has this id: it was never made, it expired (uploads that no submission names are deleted after a while), or its bytes are still being sent. Upload the file again, or finish the upload, and submit again. Nothing was stored."},
	CodeFileErased:           {Status: 410, Title: "File erased", Explain: "The entry this file belonged to was erased (formd forget, or its form's retention): its files are not served any more, though the link was signed and has not expired, and their bytes are deleted by the next pass."},
	CodeUploadOffset:         {Status: 409, Title: "Wrong upload offset", Explain: "The PATCH's Upload-Offset is not where the upload stands. Ask with HEAD for the Upload-Offset the server has, and send the rest from there."},
	CodeUploadUnavailable:    {Status: 503, Title: "Upload storage unavailable", Explain: "The server could not store or read the upload's bytes (its disk, or the S3 bucket it keeps files in, could not be reached). Nothing was kept of this request and nothing was claimed; send it again after Retry-After seconds, from the offset HEAD gives.", RetryAfter: 5},
	CodeUploadStorageFull:    {Status: 507, Title: "Upload storage full", Explain: "The server's disk (or its bucket's quota) has no room for the upload's bytes. Nothing was kept of this request and nothing was claimed: the upload stands where it stood before it. Send it again after Retry-After seconds, from the offset HEAD gives.", RetryAfter: 60},
	CodeUploadBudget:         {Status: 429, Title: "Too many uploads", Explain: "The uploads not yet part of a submission are limited, by the address they come from (an IPv6 /64 counts as one address) and by form: in number still being sent and in bytes. This upload would go over one of them (the detail says which). Finish or submit the uploads already made, or wait: unclaimed uploads expire. Then create the upload again after Retry-After seconds.", RetryAfter: 60},
	CodeFileInfected:         {Status: 422, Title: "File infected", Explain: "The virus scanner (ClamAV) found malware in the uploaded file; the detail names what it found and the field. The file was deleted and nothing was stored: send a clean file."},
	CodeScanUnavailable:      {Status: 503, Title: "Virus scanner unavailable", Explain: "Every file is scanned for viruses before a submission can use it, and the scanner could not be reached. The file is kept, unscanned and not usable yet; nothing was stored. Send the submission again, with the same key, after Retry-After seconds.", RetryAfter: 10},
	CodeChallengeRequired:    {Status: 400, Title: "Proof-of-work required", Explain: "This form asks each new submission for a solved proof-of-work challenge (no puzzle for people: the browser solves it in the background, which needs JavaScript). Get one from GET /v1/forms/{form}/challenge, solve it (ALTCHA's format) and send it in the altcha field. Nothing was stored."},
	CodeChallengeInvalid:     {Status: 403, Title: "Proof-of-work not valid", Explain: "The proof-of-work solution sent is malformed, wrong, expired, issued for another form, or used already by another submission (each solution is good for one submission; a retry with the same key may send the same one again). Get a new challenge, solve it and send the submission again with the same key — except for a solution another submission used (the detail says challenge-replayed): that is decided for its key, so send under a new key. Nothing was stored."},
	CodeFormExists:           {Status: 409, Title: "Form id taken", Explain: "A form with this id exists already (perhaps archived, or on a site you cannot see): choose another id. To change the existing form, edit it or apply its definition with PUT /v1/admin/forms."},
	CodeVersionNotFound:      {Status: 404, Title: "Form version not found", Explain: "This form has no published version with this number: list its versions with GET /v1/admin/forms/{form}/versions."},
	CodeConfirmationRequired: {Status: 409, Title: "Confirmation required", Explain: "This change reaches entries already collected (a field they hold removed, places or the one-entry-per rule changed on a form with entries). Nothing was changed. Read the changes and risks in this answer, then send the same request again with the confirm token it gives."},
	CodeFormNotEmpty:         {Status: 409, Title: "Form holds entries", Explain: "This journal cannot count a form's entries still being processed, so formd cannot know that deleting the form erases them all: only a form with no entries (none stored, no dead letters) can be deleted here. Archive it instead: closed and out of the list, its entries kept under its retention; to erase people's data, forget them or let the form's retention erase it."},
	CodeDeleteUnconfirmed:    {Status: 409, Title: "Confirm deleting the form", Explain: "This form holds entries or other data, and deleting it erases them all for good: its entries with their files, pending deliveries, dead letters, drafts and check-ins, and the journal's copies. Nothing was deleted. The answer's erases member counts what would go; to delete, send the request again with confirm set to the form's id (DELETE /v1/admin/forms/{form}?confirm={form}). To keep the entries, archive the form instead."},
	CodeFormBusy:             {Status: 409, Title: "Entries still being processed", Explain: "The journal holds entries of this form not yet decided, so the form cannot be deleted now: the form was closed, so no new entry is accepted. Try again in a moment.", RetryAfter: 2},
	CodeDraftNotFound:        {Status: 404, Title: "Draft not found", Explain: "No saved draft of this form opens with this resume token: it was never saved, it expired (drafts are kept for the form's draft_ttl after their last save), it was erased, or the token is another draft's. Start again; what you type can be saved as a new draft."},
	CodeDraftExists:          {Status: 409, Title: "Draft already saved", Explain: "A draft is already saved under this submission key. Later saves and reads of it must carry its resume token (the Draft-Token header, from the first save's resume member) and its version (If-Match); or save under a new key."},
	CodeDraftStale:           {Status: 412, Title: "Draft changed elsewhere", Explain: "This draft was saved again since the version this save names (If-Match), perhaps in another tab or on another device: nothing was changed. The answer's ETag is the current version; read the draft again (GET), merge, and save with that version."},
	CodeDraftSubmitted:       {Status: 409, Title: "Already submitted", Explain: "The submission under this draft's key was sent and decided already (the answer's status says how): the draft was consumed by it and cannot be saved or read again."},
	CodeDraftNoEmail:         {Status: 422, Title: "No e-mail address in the draft", Explain: "The resume link is e-mailed to the address typed in the form's e-mail field, and the saved draft has none. Type the address, let the draft be saved, and ask again."},
	CodeEmailNotConfigured:   {Status: 503, Title: "E-mail not set up", Explain: "This server sends no e-mail (it was started without --smtp), so the resume link cannot be e-mailed. Copy the link shown on the page instead."},
	CodeDraftEmailLimited:    {Status: 429, Title: "Resume link e-mailed recently", Explain: "The resume link of this draft, or mail to this address, was sent as often as the server allows in an hour. Wait for Retry-After seconds, or copy the link shown on the page.", RetryAfter: 3600},
	CodeDraftEmailFailed:     {Status: 502, Title: "E-mail not sent", Explain: "The mail server did not accept the message with the resume link, so it was not sent. Check the address, try again later, or copy the link shown on the page."},
	CodeDraftsDisabled:       {Status: 404, Title: "Drafts not enabled", Explain: "This form does not save drafts (its definition has no drafts: true). Submit the answers instead."},
	CodeEntryStale:           {Status: 412, Title: "Registration changed elsewhere", Explain: "This registration was changed since the version this change names (If-Match), perhaps in another tab: nothing was changed. The answer's version (and ETag) is the current one; read the registration again (GET /v1/entries/{token}) and change that version."},
	CodeIfMatchRequired:      {Status: 428, Title: "Version required", Explain: "A change of a registration must name the version it was made from, in If-Match (the ETag of GET /v1/entries/{token}), so that a retried or older change is never applied twice or over a newer one. Nothing was changed."},
	CodeEditClosed:           {Status: 409, Title: "Changes closed", Explain: "This form's answers can no longer be changed: its edit_until has passed. Nothing was changed; ask the organizer if something must be corrected."},
	CodeEntryLinkNotFound:    {Status: 404, Title: "Registration link not valid", Explain: "This registration link does not open any entry: it is mistyped, it was revoked, or the entry's data was erased. Unknown and revoked links get the same answer."},
	CodeTicketInvalid:        {Status: 422, Title: "Ticket not valid", Explain: "This is not a ticket of this form: it is forged or altered, a typed code no ticket of the form has, or a ticket of another form (the member reason says which: forged, unknown-code, another-form). The answer names no one. Nothing was checked in."},
	CodeTicketNotValidNow:    {Status: 409, Title: "Ticket not valid now", Explain: "This ticket is this form's, but its entry may not come in now: it is not stored (entry_status says what it is: waitlisted, pending, cancelled, declined). Nothing was checked in; a waitlisted entry that is promoted can come in."},
	CodeInternal:             {Status: 500, Title: "Internal error", Explain: "Something failed inside formd. If you were submitting, send the submission again with the same key: it is safe to retry."},
}

// Problem is an RFC 9457 problem document, and an error that handlers
// return so that one place writes every error response.
type Problem struct {
	Type   string            `json:"type"`
	Title  string            `json:"title"`
	Status int               `json:"status"`
	Detail string            `json:"detail,omitempty"`
	Code   string            `json:"code"`
	Key    string            `json:"key,omitempty"`
	Errors []form.FieldError `json:"errors,omitempty"`
	// Option names the full option of a capacity-reached answer when the
	// option's own places were taken (a session of a fair), not the
	// form's.
	Option string `json:"option,omitempty"`
	// Version is the current version of a draft a stale save named
	// another version of (draft-version-mismatch).
	Version int64 `json:"version,omitempty"`
	// EntryStatus is the status of the entry under a draft's key
	// (draft-submitted).
	EntryStatus string `json:"entry_status,omitempty"`
	// Reason says why a ticket is not valid (ticket-invalid): forged,
	// unknown-code or another-form.
	Reason string `json:"reason,omitempty"`
	// Erases counts what deleting a form would erase
	// (form-delete-unconfirmed): store.FormContents, encoded.
	Erases json.RawMessage `json:"erases,omitempty"`
	// RetryAfter, in seconds, is sent as the Retry-After header.
	RetryAfter int `json:"-"`
}

func (p *Problem) Error() string { return p.Code + ": " + p.Detail }

// New makes the problem for a code.
func New(code, detail string) *Problem {
	info, ok := Codes[code]
	if !ok {
		info = Codes[CodeInternal]
		code = CodeInternal
	}
	return &Problem{Type: "/problems/" + code, Title: info.Title, Status: info.Status, Detail: detail, Code: code, RetryAfter: info.RetryAfter}
}

// Body is the problem as JSON; the encoding is deterministic so that a
// replayed error is byte-for-byte the first.
func (p *Problem) Body() []byte {
	b, err := json.Marshal(p)
	if err != nil {
		panic(fmt.Sprintf("encode problem: %v", err)) // every field is a plain value
	}
	return b
}

// coded is an error that names its problem code: the journal's and the
// store's sentinels are.
type coded interface{ ProblemCode() string }

// From maps any error to the problem to answer with. It is the one
// place where errors become responses.
func From(err error) *Problem {
	var p *Problem
	var ve *form.ValidationError
	var mbe *http.MaxBytesError
	var c coded
	switch {
	case errors.As(err, &p):
		return p
	case errors.As(err, &ve):
		p := New(CodeValidationFailed, fmt.Sprintf("%d field(s) need a fix", len(ve.Errors)))
		p.Errors = ve.Errors
		return p
	case errors.As(err, &mbe):
		return New(CodePayloadTooLarge, fmt.Sprintf("the body is over the limit of %d bytes", mbe.Limit))
	case errors.As(err, &c):
		// The sentinel's own message says what happened; the causes
		// wrapped around it stay in the log.
		detail := ""
		if e, ok := c.(error); ok {
			detail = e.Error()
		}
		return New(c.ProblemCode(), detail)
	}
	return New(CodeInternal, "")
}

// Write answers with err as problem+json, logging it by its class (see
// Log).
func Write(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	p := From(err)
	Log(log, r, err, p)
	WriteDoc(w, p, p.Body(), false)
}

// Log records a failed request by the class of its problem: a client's
// mistake is not logged (it is in the metrics), nor is overload (a metric
// and an alert, not a line per refused request at a peak); an unavailable
// journal or store is a warning; anything else of the server's an error.
func Log(log *slog.Logger, r *http.Request, err error, p *Problem) {
	if p.Status < 500 || p.Code == CodeOverloaded || errors.Is(err, context.Canceled) {
		return
	}
	level := slog.LevelError
	if p.Code == CodeJournalUnavailable || p.Code == CodeStoreUnavailable {
		level = slog.LevelWarn
	}
	log.Log(r.Context(), level, "request failed", "method", r.Method, "path", r.URL.Path, "code", p.Code, "err", err)
}

// WriteDoc writes a problem whose body is already rendered (a replay).
func WriteDoc(w http.ResponseWriter, p *Problem, body []byte, replayed bool) {
	NoteCode(w, p.Code)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(p.RetryAfter))
	}
	if replayed {
		h.Set("Idempotent-Replayed", "true")
	}
	w.WriteHeader(p.Status)
	w.Write(body) //nolint:errcheck // the client may be gone; nothing to do
}

var problemPage = template.Must(template.New("problem").Parse(`<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>{{.Code}} · formd</title>
<style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;color:#222}code{background:#f3f3f3;padding:.1em .3em}</style>
</head><body>
<h1>{{.Info.Title}}</h1>
<p>HTTP status <code>{{.Info.Status}}</code>, problem code <code>{{.Code}}</code>.</p>
<p>{{.Info.Explain}}</p>
</body></html>
`))

// Docs serves GET /problems/{code}: HTML for people, JSON when asked.
func Docs(w http.ResponseWriter, r *http.Request) error {
	code := r.PathValue("code")
	info, ok := Codes[code]
	if !ok {
		return New(CodeNotFound, fmt.Sprintf("there is no problem code %q", code))
	}
	w.Header().Set("Cache-Control", "public, max-age=3600")
	if !strings.Contains(r.Header.Get("Accept"), "text/html") {
		w.Header().Set("Content-Type", "application/json")
		return json.NewEncoder(w).Encode(map[string]any{"code": code, "status": info.Status, "title": info.Title, "detail": info.Explain})
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	return problemPage.Execute(w, map[string]any{"Code": code, "Info": info})
}

// NoteCode records the problem code of a response on a writer that wants to
// know it (the metrics recorder).
func NoteCode(w http.ResponseWriter, code string) {
	if n, ok := w.(interface{ NoteCode(string) }); ok {
		n.NoteCode(code)
	}
}
