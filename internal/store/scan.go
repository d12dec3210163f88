package store

import (
	"bytes"
	"database/sql"
	"fmt"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/attempt"
	"github.com/formd/formd/internal/form"
)

// Scanner is one row of a query as both drivers have it (*sql.Row,
// *sql.Rows, pgx.Row).
type Scanner interface{ Scan(dest ...any) error }

// Rows are the rows of a query as both drivers have them (*sql.Rows,
// pgx.Rows), for the readers that fill a map rather than a slice.
type Rows interface {
	Scanner
	Next() bool
	Err() error
}

// TimeDest makes t a Scan destination of either driver: a PostgreSQL
// timestamptz (time.Time), SQLite's Unix microseconds (int64), and NULL as
// the zero time.
func TimeDest(t *time.Time) any { return timeDest{t} }

type timeDest struct{ t *time.Time }

func (d timeDest) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d.t = time.Time{}
	case time.Time:
		*d.t = v
	case int64:
		*d.t = time.UnixMicro(v)
	default:
		return fmt.Errorf("scan %T into a time", v)
	}
	return nil
}

// UploadColumns are the columns ScanUpload reads, of uploads u left joined
// with upload_claims c and with the claiming entry e (UploadJoins).
const UploadColumns = `u.id, u.form, u.field, u.size, u.name, u.type, u.sha256, u.created_at, u.expires_at, coalesce(c.entry_id, ''), c.upload_id IS NOT NULL AND e.data IS NULL`

// UploadJoins are the tables UploadColumns read, after FROM.
const UploadJoins = `uploads u LEFT JOIN upload_claims c ON c.upload_id = u.id LEFT JOIN entries e ON e.id = c.entry_id`

// UploadDeletionColumns are what ScanUploadDeletion reads, of
// upload_deletions.
const UploadDeletionColumns = `upload_id, queued_at, attempts, last_error, tried_at`

// ScanUploadDeletion reads UploadDeletionColumns.
func ScanUploadDeletion(sc Scanner) (UploadDeletion, error) {
	var d UploadDeletion
	err := sc.Scan(&d.ID, TimeDest(&d.QueuedAt), &d.Attempts, &d.LastError, TimeDest(&d.TriedAt))
	return d, err
}

// ScanUpload reads UploadColumns.
func ScanUpload(sc Scanner) (Upload, error) {
	var (
		u   Upload
		sum []byte
	)
	if err := sc.Scan(&u.ID, &u.Form, &u.Field, &u.Size, &u.Name, &u.Type, &sum, TimeDest(&u.CreatedAt), TimeDest(&u.ExpiresAt), &u.Entry, &u.Erased); err != nil {
		return u, err
	}
	u.Complete = len(sum) == len(u.SHA256)
	copy(u.SHA256[:], sum)
	return u, nil
}

// ScanEntryRef reads an entry's id, site, form, key and seq.
func ScanEntryRef(sc Scanner) (EntryRef, error) {
	var (
		e   EntryRef
		seq int64
	)
	err := sc.Scan(&e.ID, &e.Site, &e.Form, &e.Key, &seq)
	e.Seq = uint64(seq)
	return e, err
}

// RowColumns are the columns of entries that ScanRow reads, the entry's
// check-in with them (read from checkins by the entry's id: the queries
// select FROM entries, not aliased).
const RowColumns = `seq, id, form, key, status, received_at, data, ` +
	`(SELECT c.at FROM checkins c WHERE c.entry_id = entries.id), ` +
	`coalesce((SELECT c.door FROM checkins c WHERE c.entry_id = entries.id), '')`

// ScanRow reads RowColumns.
func ScanRow(sc Scanner) (Row, error) {
	var r Row
	err := sc.Scan(rowDest(&r)...)
	return r, err
}

func rowDest(r *Row) []any {
	return []any{uint64Dest{&r.Seq}, &r.ID, &r.Form, &r.Key, &r.Status, TimeDest(&r.ReceivedAt), bytesDest{(*[]byte)(&r.Data)},
		TimeDest(&r.CheckedInAt), &r.Door}
}

// DocColumns are the columns of entries that ScanDoc reads.
const DocColumns = RowColumns + `, site, fingerprint`

// ScanDoc reads DocColumns.
func ScanDoc(sc Scanner) (EntryDoc, error) {
	var d EntryDoc
	err := sc.Scan(docDest(&d)...)
	return d, err
}

func docDest(d *EntryDoc) []any {
	return append(rowDest(&d.Row), &d.Site, array32Dest{&d.Receipt})
}

// DetailColumns are the columns of entries that ScanDetail reads.
const DetailColumns = DocColumns + `, decision, decided_at, same_as`

// ScanDetail reads DetailColumns.
func ScanDetail(sc Scanner) (EntryDetail, error) {
	var d EntryDetail
	var sameAs sql.NullString
	err := sc.Scan(append(docDest(&d.EntryDoc), &d.Decision, TimeDest(&d.DecidedAt), &sameAs)...)
	d.SameAs = sameAs.String
	return d, err
}

// uint64Dest scans a non-negative integer (SQLite's integer, PostgreSQL's
// bigint) into a uint64.
type uint64Dest struct{ u *uint64 }

func (d uint64Dest) Scan(v any) error {
	switch v := v.(type) {
	case int64:
		*d.u = uint64(v)
	default:
		return fmt.Errorf("scan %T into a uint64", v)
	}
	return nil
}

// bytesDest scans a BLOB or bytea, NULL as nil, into a copy of its own.
type bytesDest struct{ b *[]byte }

func (d bytesDest) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d.b = nil
	case []byte:
		*d.b = bytes.Clone(v)
	default:
		return fmt.Errorf("scan %T into bytes", v)
	}
	return nil
}

// array32Dest scans a BLOB or bytea into a [32]byte, as much of it as fits.
type array32Dest struct{ a *[32]byte }

func (d array32Dest) Scan(v any) error {
	switch v := v.(type) {
	case nil:
		*d.a = [32]byte{}
	case []byte:
		copy(d.a[:], v)
	default:
		return fmt.Errorf("scan %T into 32 bytes", v)
	}
	return nil
}

// AccountColumns are the columns of accounts a that ScanAccount reads.
const AccountColumns = `a.id, a.email, a.name, a.role, a.sites, a.password_hash, a.disabled, a.created_at, a.updated_at`

// SitesDest makes an account's sites a Scan destination of one driver:
// PostgreSQL keeps them as text[], SQLite as JSON text.
type SitesDest func(*[]string) any

// ScanAccount reads AccountColumns, then the extra destinations.
func ScanAccount(sc Scanner, sites SitesDest, extra ...any) (accounts.Account, error) {
	var a accounts.Account
	var role string
	err := sc.Scan(append([]any{&a.ID, &a.Email, &a.Name, &role, sites(&a.Sites), &a.PasswordHash, &a.Disabled,
		TimeDest(&a.CreatedAt), TimeDest(&a.UpdatedAt)}, extra...)...)
	a.Role = accounts.Role(role)
	return a, err
}

// TokenColumns are the columns of api_tokens t joined with accounts a that
// TokenDest receives.
const TokenColumns = `t.id, t.account_id, a.email, t.name, t.created_by, t.created_at, t.last_used_at, t.revoked_at, t.scope`

// TokenDest are the Scan destinations of TokenColumns, into t.
func TokenDest(t *accounts.Token) []any {
	return []any{&t.ID, &t.AccountID, &t.AccountEmail, &t.Name, &t.CreatedBy, TimeDest(&t.CreatedAt), TimeDest(&t.LastUsedAt), TimeDest(&t.RevokedAt), &t.Scope}
}

// ScanToken reads TokenColumns.
func ScanToken(sc Scanner) (accounts.Token, error) {
	var t accounts.Token
	err := sc.Scan(TokenDest(&t)...)
	return t, err
}

// AdminTokenColumns are the columns of the admin token's row of tokens
// that ScanAdminToken reads.
const AdminTokenColumns = `account_id, created_at, used_at, revoked_at`

// ScanAdminToken reads AdminTokenColumns.
func ScanAdminToken(sc Scanner) (accounts.Token, error) {
	t := accounts.Token{ID: accounts.AdminTokenID, Name: "admin token"}
	var account sql.NullString
	err := sc.Scan(&account, TimeDest(&t.CreatedAt), TimeDest(&t.LastUsedAt), TimeDest(&t.RevokedAt))
	t.AccountID = account.String
	return t, err
}

// DeadLetterColumns are the columns of dead_letters d that ScanDeadLetter
// reads.
const DeadLetterColumns = `d.entry_id, d.form, d.key, d.seq, d.reason, d.attempts, d.at`

// ScanDeadLetter reads DeadLetterColumns.
func ScanDeadLetter(sc Scanner) (DeadLetter, error) {
	var d DeadLetter
	err := sc.Scan(&d.ID, &d.Form, &d.Key, uint64Dest{&d.Seq}, &d.Reason, &d.Attempts, TimeDest(&d.At))
	return d, err
}

// UploadStateColumns are what ScanUploadState reads, of uploads u left
// joined with upload_claims c and their entries e.
const UploadStateColumns = `u.id, u.sha256 IS NOT NULL, coalesce(c.entry_id, ''), c.upload_id IS NOT NULL AND e.data IS NULL`

// ScanUploadState reads UploadStateColumns.
func ScanUploadState(sc Scanner) (UploadState, error) {
	var u UploadState
	err := sc.Scan(&u.ID, &u.Complete, &u.Entry, &u.Erased)
	return u, err
}

// EventColumns are the columns of events e that ScanEvent reads.
const EventColumns = `e.seq, e.entry_id, e.n, e.type, e.form, e.site, e.status, e.at`

// ScanEvent reads EventColumns.
func ScanEvent(sc Scanner) (Event, error) {
	var e Event
	err := sc.Scan(eventDest(&e)...)
	return e, err
}

func eventDest(e *Event) []any {
	return []any{uint64Dest{&e.Seq}, &e.EntryID, &e.N, &e.Type, &e.Form, &e.Site, &e.Status, TimeDest(&e.At)}
}

// DeliveryColumns are the columns of deliveries d joined with their events
// e that ScanDelivery reads.
const DeliveryColumns = `d.event_seq, d.endpoint, d.state, d.attempts, d.next_at, d.last_status, d.last_error, d.updated_at, ` + EventColumns

// ScanDelivery reads DeliveryColumns.
func ScanDelivery(sc Scanner) (Delivery, error) {
	var d Delivery
	err := sc.Scan(append([]any{uint64Dest{&d.EventSeq}, &d.Endpoint, &d.State, &d.Attempts, TimeDest(&d.NextAt),
		&d.LastStatus, &d.LastError, TimeDest(&d.UpdatedAt)}, eventDest(&d.Event)...)...)
	return d, err
}

// ClaimColumns are DeliveryColumns and the address an erasure's event
// carries, which ScanClaim reads.
const ClaimColumns = DeliveryColumns + `, coalesce(e.notice_to, '')`

// ScanClaim reads ClaimColumns.
func ScanClaim(sc Scanner) (Delivery, error) {
	var d Delivery
	err := sc.Scan(append([]any{uint64Dest{&d.EventSeq}, &d.Endpoint, &d.State, &d.Attempts, TimeDest(&d.NextAt),
		&d.LastStatus, &d.LastError, TimeDest(&d.UpdatedAt)}, append(eventDest(&d.Event), &d.NoticeTo)...)...)
	return d, err
}

// AttemptColumns are the columns of delivery_attempts a that ScanAttempt
// reads.
const AttemptColumns = `a.event_seq, a.endpoint, a.at, a.status, a.latency_us, a.outcome, a.excerpt`

// ScanAttempt reads AttemptColumns.
func ScanAttempt(sc Scanner) (Attempt, error) {
	var a Attempt
	var lat int64
	var outcome string
	err := sc.Scan(uint64Dest{&a.EventSeq}, &a.Endpoint, TimeDest(&a.At), &a.Status, &lat, &outcome, &a.Excerpt)
	a.Latency, a.Outcome = time.Duration(lat)*time.Microsecond, attempt.Outcome(outcome)
	return a, err
}

// ScanMinuteCount reads a minute, counted from the Unix epoch, and its
// count of entries.
func ScanMinuteCount(sc Scanner) (MinuteCount, error) {
	var m, n int64
	err := sc.Scan(&m, &n)
	return MinuteCount{Minute: time.Unix(m*60, 0).UTC(), N: n}, err
}

// ScanArrivalHour reads an hour, counted from the Unix epoch, and its
// started, reached, received and stored counts.
func ScanArrivalHour(sc Scanner) (ArrivalHour, error) {
	var h int64
	var a ArrivalHour
	err := sc.Scan(&h, &a.Started, &a.Reached, &a.Received, &a.Stored)
	a.Hour = time.Unix(h*3600, 0).UTC()
	return a, err
}

// ArrivalColumns are the columns of arrivals a that ScanArrival reads.
const ArrivalColumns = `a.key, a.started_at, a.answered_at, a.state`

// ScanArrival reads ArrivalColumns; a time not reported is zero.
func ScanArrival(sc Scanner) (Arrival, error) {
	var a Arrival
	err := sc.Scan(&a.Key, TimeDest(&a.StartedAt), TimeDest(&a.AnsweredAt), &a.State)
	return a, err
}

// FormColumns are the columns of forms f left joined with capacity c that
// ScanForm reads.
const FormColumns = `f.id, f.site, f.source, f.version, f.updated_at, c.capacity, c.when_full`

// ScanForm reads FormColumns; a form without a limit has a nil Capacity.
func ScanForm(sc Scanner) (form.Record, error) {
	var f form.Record
	var limit sql.NullInt64
	var whenFull sql.NullString
	err := sc.Scan(&f.ID, &f.Site, &f.Source, &f.Version, TimeDest(&f.UpdatedAt), &limit, &whenFull)
	f.Capacity, f.WhenFull = intOrNil(limit), whenFull.String
	return f, err
}

// CapacityColumns are the columns of capacity c, and the count of the
// form's waitlist, that ScanCapacity reads.
const CapacityColumns = `c.form, c.capacity, c.taken,
	(SELECT count(*) FROM entries e WHERE e.form = c.form AND e.status = 'waitlisted')`

// ScanCapacity reads CapacityColumns: a form and its places.
func ScanCapacity(sc Scanner) (string, Capacity, error) {
	var id string
	var limit, taken, waitlisted sql.NullInt64
	err := sc.Scan(&id, &limit, &taken, &waitlisted)
	return id, Capacity{Limit: intOrNil(limit), Taken: int(taken.Int64), Waitlisted: int(waitlisted.Int64)}, err
}

// OptionCapacityColumns are the columns of option_places o, and the count
// of the option's waitlist, that ScanOptionCapacity reads.
const OptionCapacityColumns = `o.form, o.value, o.capacity, o.taken,
	(SELECT count(*) FROM entries e WHERE e.form = o.form AND e.status = 'waitlisted' AND e.place = o.value)`

// ScanOptionCapacity reads OptionCapacityColumns: a form, one of its
// options with places, and the option's places.
func ScanOptionCapacity(sc Scanner) (string, string, Capacity, error) {
	var id, value string
	var limit, taken, waitlisted sql.NullInt64
	err := sc.Scan(&id, &value, &limit, &taken, &waitlisted)
	return id, value, Capacity{Limit: intOrNil(limit), Taken: int(taken.Int64), Waitlisted: int(waitlisted.Int64)}, err
}

// ReadCapacities reads rows of CapacityColumns: the places of each form.
func ReadCapacities(rows Rows) (map[string]Capacity, error) {
	out := map[string]Capacity{}
	for rows.Next() {
		id, c, err := ScanCapacity(rows)
		if err != nil {
			return nil, err
		}
		out[id] = c
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// AddOptionCapacities adds rows of OptionCapacityColumns, one option with
// places a row, to their forms' places in out.
func AddOptionCapacities(rows Rows, out map[string]Capacity) error {
	for rows.Next() {
		id, value, c, err := ScanOptionCapacity(rows)
		if err != nil {
			return err
		}
		fc := out[id]
		if fc.Options == nil {
			fc.Options = map[string]Capacity{}
		}
		fc.Options[value] = c
		out[id] = fc
	}
	return rows.Err()
}

// ScanErasureRequest reads an erasure request's form, entry id, time of
// request and time done (NULL while pending).
func ScanErasureRequest(sc Scanner) (ErasureRequest, error) {
	var e ErasureRequest
	err := sc.Scan(&e.Form, &e.EntryID, TimeDest(&e.RequestedAt), TimeDest(&e.DoneAt))
	return e, err
}

func intOrNil(n sql.NullInt64) *int {
	if !n.Valid {
		return nil
	}
	v := int(n.Int64)
	return &v
}

// PlaceCount is one option's places as an audit sees them: its capacity
// (nil: no limit of its own) and counter (Taken, what decisions guard),
// and the entries counted one by one that hold its place (stored, and
// pending under review) or wait for it.
type PlaceCount struct {
	Value                       string
	Capacity                    *int
	Taken                       int64
	Stored, Pending, Waitlisted int64
}

// Counted is the entries holding the option's place: what Taken must be.
func (c PlaceCount) Counted() int64 { return c.Stored + c.Pending }

// Drifted says the option's counter is not the entries counted one by one.
func (c PlaceCount) Drifted() bool { return c.Taken != c.Counted() }

// Over says more entries hold the option's place than it has: oversold,
// or its places lowered below the entries already holding them.
func (c PlaceCount) Over() bool { return c.Capacity != nil && c.Counted() > int64(*c.Capacity) }

// PlaceCountsQuery reads a form's PlaceCounts (ScanPlaceCount), in the
// options' value order; one statement for both drivers.
func PlaceCountsQuery(ph func(n int) string) string {
	count := func(status string) string {
		return `(SELECT COUNT(*) FROM entries e WHERE e.form = op.form AND e.place = op.value AND e.status = '` + status + `')`
	}
	return `SELECT op.value, op.capacity, op.taken, ` + count(StatusStored) + `, ` + count(StatusPending) + `, ` + count(StatusWaitlisted) +
		` FROM option_places op WHERE op.form = ` + ph(1) + ` ORDER BY op.value`
}

// ScanPlaceCount reads one row of PlaceCountsQuery.
func ScanPlaceCount(sc Scanner) (PlaceCount, error) {
	var c PlaceCount
	var capacity *int64
	err := sc.Scan(&c.Value, &capacity, &c.Taken, &c.Stored, &c.Pending, &c.Waitlisted)
	if capacity != nil {
		n := int(*capacity)
		c.Capacity = &n
	}
	return c, err
}
