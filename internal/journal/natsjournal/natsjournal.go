// Package natsjournal is the journal driver for several formd instances: a
// NATS JetStream stream that every instance appends to, and one durable
// pull consumer that every instance's processor shares.
//
// Subjects are <prefix>.<site>.<form>.<keyhash>, so that replay filters by
// site and form on the server, and so that the stream itself can keep
// (form, key) unique: the stream allows one message per subject and refuses
// the next one (MaxMsgsPerSubject 1 with DiscardNewPerSubject). That rule
// has no time window, unlike Nats-Msg-Id, which every append also carries so
// that a retry inside the window is answered as a duplicate without an
// error. Either way, a duplicate reports the first entry, read back from
// the stream, fingerprint included.
//
// A delivered entry is leased to the instance that fetched it: the driver
// tells the server the entry is in progress every third of AckWait until
// the processor acknowledges or naks it, so AckWait measures how long an
// instance may be silent (dead) rather than how long a store transaction
// may take. Entries the server gives up on after MaxDeliver deliveries are
// announced by a max-deliveries advisory; the driver captures those
// advisories in a small work-queue stream of their own (so none is lost
// while no instance listens) and hands each entry to Options.DeadLetter.
package natsjournal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var (
	_ journal.Journal   = (*Journal)(nil)
	_ journal.Forgetter = (*Journal)(nil)
)

// Options configure the journal. Zero values take the defaults.
type Options struct {
	// URL is the NATS server, or several separated by commas.
	URL string
	// Stream is the stream's name. Default FORMD. The subjects are the
	// name in lower case followed by .>, so two formd deployments sharing
	// a NATS account use two names.
	Stream string
	// Consumer is the durable consumer all instances share. Default
	// processor.
	Consumer string
	// Replicas of the stream: 0 picks 3 when the server is part of a
	// cluster and 1 otherwise.
	Replicas int
	// AckWait is how long an instance may hold an entry without a word
	// before the server delivers it to another. Default 30s.
	AckWait time.Duration
	// MaxDeliver is how often an entry is delivered before the server gives
	// up on it and it is dead-lettered. Default 20.
	MaxDeliver int
	// MaxAckPending bounds the entries delivered and not yet acknowledged,
	// across every instance: the server delivers no more until some are
	// acknowledged. Default 10000.
	MaxAckPending int
	// DuplicateWindow is how long the server remembers Nats-Msg-Id values.
	// Default 10m. Dedup does not end with it (see the package doc).
	DuplicateWindow time.Duration
	// MaxBytes bounds the stream's size; when it is full, appends are
	// refused as overloaded rather than old entries dropped. Default -1,
	// unlimited.
	MaxBytes int64
	// QueueSize bounds the appends waiting for the server; beyond it,
	// Append answers journal.ErrOverloaded at once. Default 16384.
	QueueSize int
	// PublishTimeout bounds one append's wait for the server's ack.
	// Default 5s.
	PublishTimeout time.Duration
	// FetchWait is how long one pull request waits on the server for an
	// entry. Default 1s.
	FetchWait time.Duration
	// MonitorURLs are the HTTP monitoring endpoints of the NATS servers
	// (such as http://127.0.0.1:8222), read at start to check their fsync
	// setting when the system account cannot be asked.
	MonitorURLs []string
	// DeadLetter records an entry the server gave up on after MaxDeliver
	// deliveries (the store's DeadLetter). When it fails the advisory is
	// kept and tried again.
	DeadLetter func(ctx context.Context, e journal.Entry, reason string, attempts int) error
	// Attach opens the stream and consumer that serving instances made,
	// without creating or changing them, and starts no background work:
	// for tools (audit, replay, forget) that run beside a deployment and
	// must not rewrite its settings with their own defaults.
	Attach bool
	Now    func() time.Time
	Logger *slog.Logger
}

func (o *Options) setDefaults() {
	if o.Stream == "" {
		o.Stream = "FORMD"
	}
	if o.Consumer == "" {
		o.Consumer = "processor"
	}
	if o.AckWait <= 0 {
		o.AckWait = 30 * time.Second
	}
	if o.MaxDeliver <= 0 {
		o.MaxDeliver = 20
	}
	if o.MaxAckPending <= 0 {
		o.MaxAckPending = 10000
	}
	if o.DuplicateWindow <= 0 {
		o.DuplicateWindow = 10 * time.Minute
	}
	if o.MaxBytes == 0 {
		o.MaxBytes = -1
	}
	if o.QueueSize <= 0 {
		o.QueueSize = 16384
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 5 * time.Second
	}
	if o.FetchWait <= 0 {
		o.FetchWait = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
}

// backOff is the redelivery schedule of entries whose holder went silent:
// AckWait, then doubling up to ten minutes, so that an entry that kills
// every instance that takes it slows down before it is dead-lettered. The
// server uses its first step as the ack wait.
func backOff(ackWait time.Duration, maxDeliver int) []time.Duration {
	var out []time.Duration
	for d := ackWait; len(out) < maxDeliver-1 && len(out) < 8; d *= 2 {
		out = append(out, min(d, 10*time.Minute))
	}
	return out
}

// Journal is the JetStream journal.
type Journal struct {
	opts    Options
	nc      *nats.Conn
	js      jetstream.JetStream
	stream  jetstream.Stream
	cons    jetstream.Consumer
	prefix  string
	slots   chan struct{} // appends in flight
	durable Durability

	stop context.CancelFunc
	bg   sync.WaitGroup
	// drainers hand back what abandoned pull requests still deliver;
	// added to under mu while not closed, so Close can wait for them.
	drainers sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	inflight map[uint64]*flight
}

type flight struct {
	msg         jetstream.Msg
	e           journal.Entry
	deliveredAt time.Time
}

// Durability is what the journal found at start about how safe an
// acknowledged append is.
type Durability struct {
	Replicas int
	// SyncKnown says whether the servers' fsync setting could be read;
	// SyncAlways whether every server fsyncs each write.
	SyncKnown, SyncAlways bool
	// Lax lists what makes acknowledged entries losable, empty when
	// nothing does.
	Lax []string
}

// Open connects, creates or updates the stream and the consumer, checks
// durability (logging a warning when it is lax) and starts the lease and
// dead-letter loops.
func Open(ctx context.Context, opts Options) (*Journal, error) {
	opts.setDefaults()
	if opts.URL == "" {
		return nil, errors.New("open nats journal: no URL")
	}
	nc, err := nats.Connect(opts.URL,
		nats.Name("formd"),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250*time.Millisecond),
		nats.Timeout(5*time.Second),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				opts.Logger.Warn("nats journal disconnected; reconnecting", "err", err)
			}
		}),
		nats.ReconnectHandler(func(c *nats.Conn) {
			opts.Logger.Info("nats journal reconnected", "server", c.ConnectedUrlRedacted())
		}),
	)
	if err != nil {
		return nil, fmt.Errorf("open nats journal: connect to %s: %w", redact(opts.URL), err)
	}
	j := &Journal{
		opts:     opts,
		nc:       nc,
		prefix:   subjectPrefix(opts.Stream),
		slots:    make(chan struct{}, opts.QueueSize),
		inflight: map[uint64]*flight{},
	}
	j.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(opts.QueueSize),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			opts.Logger.Error("asynchronous journal append failed; the entry is not journaled", "subject", m.Subject, "err", err)
		}))
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("open nats journal: %w", err)
	}
	bgCtx, stop := context.WithCancel(context.Background())
	j.stop = stop
	if opts.Attach {
		if err := j.attach(ctx); err != nil {
			nc.Close()
			return nil, fmt.Errorf("open nats journal: %w", err)
		}
		return j, nil
	}
	if err := j.setup(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("open nats journal: %w", err)
	}
	j.durable = j.checkDurability(ctx)
	if len(j.durable.Lax) > 0 {
		opts.Logger.Warn("NATS JETSTREAM DURABILITY IS LAX: acknowledged submissions can be lost if a NATS server crashes or loses power; see the README, section \"Durability: what to configure\"",
			"stream", opts.Stream, "replicas", j.durable.Replicas, "problems", strings.Join(j.durable.Lax, "; "))
	}
	j.bg.Go(func() { j.leaseLoop(bgCtx) })
	j.bg.Go(func() { j.deadLetterLoop(bgCtx) })
	return j, nil
}

// Durability reports what Open found about durability.
func (j *Journal) Durability() Durability { return j.durable }

// LaxDurability lists what makes acknowledged entries losable (the server
// exports it as a metric to alert on); empty when nothing does.
func (j *Journal) LaxDurability() []string { return j.durable.Lax }

// attach finds the stream and the consumer as serving instances made
// them, changing nothing.
func (j *Journal) attach(ctx context.Context) error {
	st, err := j.js.Stream(ctx, j.opts.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("there is no journal stream %s on the NATS server: start formd serve with this --journal and --nats-stream first", j.opts.Stream)
	}
	if err != nil {
		return fmt.Errorf("find stream %s: %w", j.opts.Stream, err)
	}
	cons, err := st.Consumer(ctx, j.opts.Consumer)
	if err != nil {
		return fmt.Errorf("find consumer %s on %s: %w", j.opts.Consumer, j.opts.Stream, err)
	}
	j.stream, j.cons = st, cons
	return nil
}

func (j *Journal) setup(ctx context.Context) error {
	replicas := j.opts.Replicas
	if replicas <= 0 {
		replicas = 1
		if j.nc.ConnectedClusterName() != "" {
			replicas = 3
		}
	}
	st, err := j.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        j.opts.Stream,
		Description: "formd journal: accepted submissions, one message per (form, key)",
		Subjects:    []string{j.prefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		// One message per subject, the next refused: (form, key) stays
		// unique for the stream's life, not only for the duplicate window.
		MaxMsgsPerSubject:    1,
		Discard:              jetstream.DiscardNew,
		DiscardNewPerSubject: true,
		MaxMsgs:              -1,
		MaxBytes:             j.opts.MaxBytes,
		Duplicates:           j.opts.DuplicateWindow,
	})
	if err != nil {
		return fmt.Errorf("create stream %s (replicas %d): %w", j.opts.Stream, replicas, err)
	}
	j.stream = st
	j.cons, err = st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:       j.opts.Consumer,
		Description:   "formd processors of every instance",
		AckPolicy:     jetstream.AckExplicitPolicy,
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckWait:       j.opts.AckWait,
		BackOff:       backOff(j.opts.AckWait, j.opts.MaxDeliver),
		MaxDeliver:    j.opts.MaxDeliver,
		MaxAckPending: j.opts.MaxAckPending,
		FilterSubject: j.prefix + ".>",
	})
	if err != nil {
		return fmt.Errorf("create consumer %s on %s: %w", j.opts.Consumer, j.opts.Stream, err)
	}
	// The server announces an entry it gives up on once, on a core NATS
	// subject; a work-queue stream keeps that announcement until an
	// instance has recorded the dead letter.
	adv, err := j.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name:        j.advisoryStream(),
		Description: "formd: max-deliveries advisories of " + j.opts.Stream + " to record as dead letters",
		Subjects:    []string{j.advisorySubject()},
		Retention:   jetstream.WorkQueuePolicy,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if err != nil {
		return fmt.Errorf("create stream %s: %w", j.advisoryStream(), err)
	}
	if _, err := adv.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{
		Durable:   j.opts.Consumer,
		AckPolicy: jetstream.AckExplicitPolicy,
		AckWait:   30 * time.Second,
	}); err != nil {
		return fmt.Errorf("create consumer on %s: %w", j.advisoryStream(), err)
	}
	return nil
}

func (j *Journal) advisoryStream() string { return j.opts.Stream + "_MAX_DELIVERIES" }

func (j *Journal) advisorySubject() string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + j.opts.Stream + "." + j.opts.Consumer
}

// subjectPrefix is the stream name as a subject token.
func subjectPrefix(stream string) string {
	return token(strings.ToLower(stream))
}

// token makes s a valid subject token, keeping it readable when it is
// made of letters, digits, '-' and '_' and does not start with '_';
// anything else (the empty site included) becomes '_' and its hex, so no
// two values share a token.
func token(s string) string {
	plain := s != "" && s[0] != '_'
	for i := 0; plain && i < len(s); i++ {
		c := s[i]
		plain = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if plain {
		return s
	}
	return "_" + hex.EncodeToString([]byte(s))
}

// keyHash names a key in a subject: 128 bits of its SHA-256, far from any
// collision among one form's keys; Lookup checks the key anyway.
func keyHash(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:16])
}

func (j *Journal) subject(site, form, key string) string {
	return j.prefix + "." + token(site) + "." + token(form) + "." + keyHash(key)
}

// filterSubject selects a site and a form, either of which may be empty
// for all.
func (j *Journal) filterSubject(site, form string) string {
	s, f := "*", "*"
	if site != "" {
		s = token(site)
	}
	if form != "" {
		f = token(form)
	}
	return j.prefix + "." + s + "." + f + ".*"
}

// record is an entry as the stream keeps it. Data is kept as a string so
// that its bytes come back exactly as they went in.
type record struct {
	ID          string   `json:"id"`
	Site        string   `json:"site"`
	Form        string   `json:"form"`
	Key         string   `json:"key"`
	Fingerprint string   `json:"fingerprint"`
	Digest      string   `json:"digest,omitempty"`
	ReceivedAt  string   `json:"received_at"`
	Spam        bool     `json:"spam,omitempty"`
	Claims      []string `json:"claims,omitempty"`
	Data        string   `json:"data"`
}

func encode(e journal.Entry) ([]byte, error) {
	return json.Marshal(record{
		ID: e.ID, Site: e.Site, Form: e.Form, Key: e.Key,
		Fingerprint: hex.EncodeToString(e.Fingerprint[:]),
		Digest:      digestHex(e.Digest),
		ReceivedAt:  e.ReceivedAt.UTC().Format(time.RFC3339Nano),
		Spam:        e.Spam, Claims: e.Claims, Data: string(e.Data),
	})
}

// digestHex writes a digest, or nothing for the zero digest of an entry
// that has none.
func digestHex(d [32]byte) string {
	if d == ([32]byte{}) {
		return ""
	}
	return hex.EncodeToString(d[:])
}

func decode(seq uint64, b []byte) (journal.Entry, error) {
	var r record
	if err := json.Unmarshal(b, &r); err != nil {
		return journal.Entry{}, fmt.Errorf("decode journal entry %d: %w", seq, err)
	}
	e := journal.Entry{Seq: seq, ID: r.ID, Site: r.Site, Form: r.Form, Key: r.Key, Spam: r.Spam, Claims: r.Claims, Data: json.RawMessage(r.Data)}
	fp, err := hex.DecodeString(r.Fingerprint)
	if err != nil || len(fp) != len(e.Fingerprint) {
		return journal.Entry{}, fmt.Errorf("decode journal entry %d: bad fingerprint", seq)
	}
	copy(e.Fingerprint[:], fp)
	if r.Digest != "" {
		d, err := hex.DecodeString(r.Digest)
		if err != nil || len(d) != len(e.Digest) {
			return journal.Entry{}, fmt.Errorf("decode journal entry %d: bad digest", seq)
		}
		copy(e.Digest[:], d)
	}
	if e.ReceivedAt, err = time.Parse(time.RFC3339Nano, r.ReceivedAt); err != nil {
		return journal.Entry{}, fmt.Errorf("decode journal entry %d: %w", seq, err)
	}
	return e, nil
}

func (j *Journal) isClosed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.closed
}

// Append publishes the entry. In sync mode it returns once the stream has
// stored it (on a quorum of replicas) or found (form, key) there already;
// otherwise once it is handed to the connection.
func (j *Journal) Append(ctx context.Context, e journal.Entry, sync bool) (journal.Appended, error) {
	if j.isClosed() {
		return journal.Appended{}, journal.ErrClosed
	}
	select {
	case j.slots <- struct{}{}:
		defer func() { <-j.slots }()
	default:
		return journal.Appended{}, fmt.Errorf("append %s: %d appends waiting: %w", e.Form, cap(j.slots), journal.ErrOverloaded)
	}
	body, err := encode(e)
	if err != nil {
		return journal.Appended{}, fmt.Errorf("append %s: %w", e.Form, err)
	}
	msg := &nats.Msg{Subject: j.subject(e.Site, e.Form, e.Key), Data: body, Header: nats.Header{}}
	msgID := token(e.Form) + "." + keyHash(e.Key)
	if !sync {
		if _, err := j.js.PublishMsgAsync(msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(j.opts.Stream)); err != nil {
			return journal.Appended{}, j.publishError(e, err)
		}
		return journal.Appended{Entry: e}, nil
	}
	pctx, cancel := context.WithTimeout(ctx, j.opts.PublishTimeout)
	defer cancel()
	ack, err := j.js.PublishMsg(pctx, msg, jetstream.WithMsgID(msgID), jetstream.WithExpectStream(j.opts.Stream))
	switch {
	case err == nil && !ack.Duplicate:
		e.Seq = ack.Sequence
		return journal.Appended{Entry: e}, nil
	case err == nil:
		// Inside the duplicate window: the ack names the first entry.
		first, err := j.first(pctx, e, ack.Sequence)
		if err != nil {
			return journal.Appended{}, err
		}
		return journal.Appended{Entry: first, Duplicate: true}, nil
	case isPerSubjectLimit(err):
		// After the window: the stream refused a second message for the
		// subject, so the first one is there to read.
		first, err := j.first(pctx, e, 0)
		if err != nil {
			return journal.Appended{}, err
		}
		return journal.Appended{Entry: first, Duplicate: true}, nil
	case ctx.Err() != nil:
		// The client left; the append may still have been stored, and a
		// retry with the same key finds it.
		return journal.Appended{}, ctx.Err()
	default:
		return journal.Appended{}, j.publishError(e, err)
	}
}

// first reads the entry already in the stream for e's (form, key), by its
// sequence when known, else by subject.
func (j *Journal) first(ctx context.Context, e journal.Entry, seq uint64) (journal.Entry, error) {
	var (
		raw *jetstream.RawStreamMsg
		err error
	)
	// The first append of a key racing this one may be a moment from
	// being readable on the leader; a short wait covers it.
	for attempt := 0; ; attempt++ {
		if seq > 0 {
			raw, err = j.stream.GetMsg(ctx, seq)
		} else {
			raw, err = j.stream.GetLastMsgForSubject(ctx, j.subject(e.Site, e.Form, e.Key))
		}
		if err == nil || !errors.Is(err, jetstream.ErrMsgNotFound) || attempt == 20 {
			break
		}
		select {
		case <-ctx.Done():
			return journal.Entry{}, fmt.Errorf("append %s: read first entry: %w: %w", e.Form, journal.ErrUnavailable, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
	if err != nil {
		return journal.Entry{}, fmt.Errorf("append %s: read first entry: %w: %w", e.Form, journal.ErrUnavailable, err)
	}
	first, err := decode(raw.Sequence, raw.Data)
	if err != nil {
		return journal.Entry{}, fmt.Errorf("append %s: %w", e.Form, err)
	}
	if first.Form != e.Form || first.Key != e.Key {
		return journal.Entry{}, fmt.Errorf("append %s: entry %d under this key's subject is for another key: %w", e.Form, raw.Sequence, journal.ErrUnavailable)
	}
	return first, nil
}

// isPerSubjectLimit says the stream refused a message because its subject
// (its form and key) already has one.
func isPerSubjectLimit(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && strings.Contains(api.Description, "maximum messages per subject")
}

// publishError maps a failed publish to what intake answers: overloaded
// when the stream or the connection's buffers are full, unavailable when
// the servers did not answer (no leader, no responders, timeouts, a lost
// connection).
func (j *Journal) publishError(e journal.Entry, err error) error {
	var api *jetstream.APIError
	switch {
	case errors.Is(err, jetstream.ErrTooManyStalledMsgs), errors.Is(err, nats.ErrSlowConsumer),
		errors.As(err, &api) && (strings.Contains(api.Description, "maximum messages exceeded") || strings.Contains(api.Description, "maximum bytes exceeded")):
		return fmt.Errorf("append %s: %w: %w", e.Form, journal.ErrOverloaded, err)
	case errors.Is(err, nats.ErrConnectionClosed) && j.isClosed():
		return journal.ErrClosed
	default:
		return fmt.Errorf("append %s: %w: %w", e.Form, journal.ErrUnavailable, err)
	}
}

// Fetch waits for entries to process and leases them to this instance.
// Transient failures (a lost connection, no consumer leader) are waited
// out here, so the processor only sees ctx's end or ErrClosed.
func (j *Journal) Fetch(ctx context.Context, limit int) ([]journal.Entry, error) {
	limit = max(limit, 1)
	failures := 0
	for {
		if j.isClosed() {
			return nil, journal.ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		msgs, err := j.pull(ctx, limit)
		if err != nil {
			if ctx.Err() != nil || j.isClosed() {
				continue
			}
			if failures%50 == 0 {
				j.opts.Logger.Warn("journal fetch failed; retrying", "err", err, "failures", failures+1)
			}
			failures++
			wait(ctx, min(time.Duration(failures)*50*time.Millisecond, time.Second))
			continue
		}
		if out := j.lease(msgs); len(out) > 0 {
			return out, nil
		}
	}
}

// pull takes what is ready at once; when nothing is, it waits up to
// FetchWait for one entry and then takes what else is ready.
func (j *Journal) pull(ctx context.Context, limit int) ([]jetstream.Msg, error) {
	got, err := j.take(limit)
	if err != nil || len(got) > 0 {
		return got, err
	}
	w := j.opts.FetchWait
	if dl, ok := ctx.Deadline(); ok {
		w = min(w, time.Until(dl)*9/10)
	}
	if w < 5*time.Millisecond {
		<-ctx.Done()
		return nil, nil
	}
	b, err := j.cons.Fetch(1, jetstream.FetchMaxWait(w))
	if err != nil {
		return nil, err
	}
	select {
	case m, ok := <-b.Messages():
		if !ok {
			return nil, ignorable(b.Error())
		}
		got = append(got, m)
	case <-ctx.Done():
		// The pull request is still open on the server: hand back
		// whatever it delivers rather than strand it until AckWait.
		drain := func() {
			for m := range b.Messages() {
				_ = m.Nak()
			}
		}
		j.mu.Lock()
		if j.closed {
			j.mu.Unlock()
			drain()
		} else {
			j.drainers.Go(drain)
			j.mu.Unlock()
		}
		return nil, nil
	}
	if limit > 1 {
		more, err := j.take(limit - 1)
		if err != nil {
			j.opts.Logger.Debug("journal fetch: topping up a batch failed", "err", err)
		}
		got = append(got, more...)
	}
	return got, nil
}

// take fetches what the consumer has ready, without waiting.
func (j *Journal) take(limit int) ([]jetstream.Msg, error) {
	b, err := j.cons.FetchNoWait(limit)
	if err != nil {
		return nil, err
	}
	var out []jetstream.Msg
	for m := range b.Messages() {
		out = append(out, m)
	}
	if len(out) > 0 {
		return out, nil
	}
	return nil, ignorable(b.Error())
}

// ignorable drops the pull outcomes that only mean "nothing now".
func ignorable(err error) error {
	if err == nil || errors.Is(err, jetstream.ErrNoMessages) || errors.Is(err, nats.ErrTimeout) ||
		errors.Is(err, jetstream.ErrConsumerLeadershipChanged) || errors.Is(err, jetstream.ErrBatchCompleted) {
		return nil
	}
	return err
}

// lease turns delivered messages into entries held by this instance.
func (j *Journal) lease(msgs []jetstream.Msg) []journal.Entry {
	now := j.opts.Now()
	out := make([]journal.Entry, 0, len(msgs))
	j.mu.Lock()
	defer j.mu.Unlock()
	for _, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			j.opts.Logger.Error("journal message without metadata; skipped", "subject", m.Subject(), "err", err)
			continue
		}
		e, err := decode(md.Sequence.Stream, m.Data())
		if err != nil {
			// Not an entry formd wrote: stop its delivery, keep it in the
			// stream as evidence.
			j.opts.Logger.Error("journal message is not a formd entry; no more deliveries", "seq", md.Sequence.Stream, "err", err)
			_ = m.Term()
			continue
		}
		e.Deliveries = int(md.NumDelivered)
		j.inflight[e.Seq] = &flight{msg: m, e: e, deliveredAt: now}
		out = append(out, e)
	}
	return out
}

// leaseLoop tells the server, every third of AckWait, that the entries
// this instance holds are still in progress.
func (j *Journal) leaseLoop(ctx context.Context) {
	t := time.NewTicker(max(j.opts.AckWait/3, 50*time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		j.mu.Lock()
		msgs := make([]jetstream.Msg, 0, len(j.inflight))
		for _, f := range j.inflight {
			msgs = append(msgs, f.msg)
		}
		j.mu.Unlock()
		for _, m := range msgs {
			_ = m.InProgress() // an entry acked meanwhile refuses it; that is fine
		}
	}
}

// Ack tells the server the entries are decided. Sequences this instance
// does not hold (replayed entries, or ones another instance holds) are
// left alone, as in the embedded journal.
func (j *Journal) Ack(_ context.Context, seqs ...uint64) error {
	j.mu.Lock()
	msgs := make([]jetstream.Msg, 0, len(seqs))
	for _, s := range seqs {
		if f, ok := j.inflight[s]; ok {
			msgs = append(msgs, f.msg)
			delete(j.inflight, s)
		}
	}
	j.mu.Unlock()
	var errs []error
	for _, m := range msgs {
		if err := m.Ack(); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
			errs = append(errs, err)
		}
	}
	if len(msgs) > 0 {
		errs = append(errs, j.nc.FlushTimeout(5*time.Second))
	}
	if err := errors.Join(errs...); err != nil {
		// Unacknowledged entries come again and are replayed by the store.
		return fmt.Errorf("ack journal entries: %w", err)
	}
	return nil
}

// Nak hands an entry back for a redelivery after delay.
func (j *Journal) Nak(_ context.Context, seq uint64, delay time.Duration) error {
	j.mu.Lock()
	f, ok := j.inflight[seq]
	delete(j.inflight, seq)
	j.mu.Unlock()
	if !ok {
		return nil
	}
	if err := f.msg.NakWithDelay(max(delay, 0)); err != nil && !errors.Is(err, jetstream.ErrMsgAlreadyAckd) {
		return fmt.Errorf("nak journal entry %d: %w", seq, err)
	}
	return nil
}

// Pending hands back, as a new delivery, the entries this instance has held
// since before t without a decision. Entries held by a dead instance come
// back from the server after AckWait; those need no reconciler.
func (j *Journal) Pending(_ context.Context, deliveredBefore time.Time, limit int) ([]journal.Entry, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	var stale []*flight
	for _, f := range j.inflight {
		if f.deliveredAt.Before(deliveredBefore) {
			stale = append(stale, f)
		}
	}
	slices.SortFunc(stale, func(a, b *flight) int {
		switch {
		case a.e.Seq < b.e.Seq:
			return -1
		case a.e.Seq > b.e.Seq:
			return 1
		}
		return 0
	})
	if limit > 0 && len(stale) > limit {
		stale = stale[:limit]
	}
	now := j.opts.Now()
	out := make([]journal.Entry, len(stale))
	for i, f := range stale {
		f.deliveredAt = now
		f.e.Deliveries++
		out[i] = f.e
	}
	return out, nil
}

// Lookup reads the entry for (form, key): the last (and only) message on
// its subject. The site is not known here, so the subject has a wildcard
// for it; the stream keeps one message per (site, form, key) and a form
// belongs to one site.
func (j *Journal) Lookup(ctx context.Context, form, key string) (journal.Entry, bool, error) {
	subj := j.prefix + ".*." + token(form) + "." + keyHash(key)
	raw, err := j.stream.GetLastMsgForSubject(ctx, subj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return journal.Entry{}, false, nil
	}
	if err != nil {
		return journal.Entry{}, false, fmt.Errorf("look up journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	e, err := decode(raw.Sequence, raw.Data)
	if err != nil {
		return journal.Entry{}, false, fmt.Errorf("look up journal entry: %w", err)
	}
	if e.Form != form || e.Key != key {
		return journal.Entry{}, false, nil
	}
	return e, true, nil
}

// Forget deletes the entry of (form, key) from the stream, overwriting its
// data on the servers' disks (a secure delete), once the shared consumer
// has acknowledged it: every entry at or below its ack floor has its
// outcome in the store. The subject is then free, but the store keeps the
// key, so a retry of it is still answered as the first.
func (j *Journal) Forget(ctx context.Context, form, key string) error {
	e, found, err := j.Lookup(ctx, form, key)
	if err != nil || !found {
		return err
	}
	info, err := j.cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("forget journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	if e.Seq > info.AckFloor.Stream {
		return journal.ErrPending
	}
	if err := j.stream.SecureDeleteMsg(ctx, e.Seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return fmt.Errorf("forget journal entry: %w: %w", journal.ErrUnavailable, err)
	}
	return nil
}

// Read calls fn for every entry matching f, in journal order. The stream
// filters by subject (site, form); the time window is checked here, and
// the server starts reading a quarter hour before Since so that clocks of
// instances and servers may differ that much.
func (j *Journal) Read(ctx context.Context, f journal.Filter, fn func(journal.Entry) error) error {
	cfg := jetstream.ConsumerConfig{
		AckPolicy:         jetstream.AckNonePolicy,
		FilterSubject:     j.filterSubject(f.Site, f.Form),
		InactiveThreshold: 10 * time.Minute,
		MemoryStorage:     true,
		Replicas:          1,
	}
	switch {
	case f.AfterSeq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, f.AfterSeq+1
	case !f.Since.IsZero():
		start := f.Since.Add(-15 * time.Minute)
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	cons, err := j.stream.CreateConsumer(ctx, cfg)
	if err != nil {
		return fmt.Errorf("read journal: %w: %w", journal.ErrUnavailable, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = j.stream.DeleteConsumer(dctx, name) // the inactive threshold removes it otherwise
	}()
	pending := cons.CachedInfo().NumPending
	for pending > 0 {
		b, err := cons.Fetch(int(min(pending, 500)), jetstream.FetchMaxWait(5*time.Second))
		if err != nil {
			return fmt.Errorf("read journal: %w: %w", journal.ErrUnavailable, err)
		}
		n := 0
		for m := range b.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return fmt.Errorf("read journal: %w", err)
			}
			pending = md.NumPending
			e, err := decode(md.Sequence.Stream, m.Data())
			if err != nil {
				return fmt.Errorf("read journal: %w", err)
			}
			if !matches(e, f) {
				continue
			}
			if err := fn(e); err != nil {
				for range b.Messages() {
				}
				return err
			}
		}
		if err := ignorable(b.Error()); err != nil {
			return fmt.Errorf("read journal: %w: %w", journal.ErrUnavailable, err)
		}
		if n == 0 {
			return fmt.Errorf("read journal: the server sent nothing with %d entries to go: %w", pending, journal.ErrUnavailable)
		}
	}
	return nil
}

func matches(e journal.Entry, f journal.Filter) bool {
	return (f.Form == "" || e.Form == f.Form) && (f.Site == "" || e.Site == f.Site) &&
		(f.Since.IsZero() || !e.ReceivedAt.Before(f.Since)) && (f.Until.IsZero() || e.ReceivedAt.Before(f.Until)) &&
		e.Seq > f.AfterSeq
}

// Stats reports the consumer's backlog across every instance: entries not
// yet delivered plus those delivered and not acknowledged.
func (j *Journal) Stats(ctx context.Context) (journal.Stats, error) {
	ci, err := j.cons.Info(ctx)
	if err != nil {
		return journal.Stats{}, fmt.Errorf("journal stats: %w: %w", journal.ErrUnavailable, err)
	}
	si, err := j.stream.Info(ctx)
	if err != nil {
		return journal.Stats{}, fmt.Errorf("journal stats: %w: %w", journal.ErrUnavailable, err)
	}
	st := journal.Stats{Backlog: int64(ci.NumPending) + int64(ci.NumAckPending), LastSeq: si.State.LastSeq}
	if st.Backlog > 0 {
		// Above the ack floor, the first entry is the oldest one that may
		// be unacknowledged.
		if raw, err := j.stream.GetMsg(ctx, ci.AckFloor.Stream+1); err == nil {
			if e, err := decode(raw.Sequence, raw.Data); err == nil {
				st.OldestPending = e.ReceivedAt
			}
		}
	}
	return st, nil
}

// deadLetterLoop records the entries the server gave up on, one captured
// max-deliveries advisory at a time. Every instance runs it; the work-queue
// stream hands each advisory to one of them, and the store's dead letter
// is idempotent besides.
func (j *Journal) deadLetterLoop(ctx context.Context) {
	cons, err := j.js.Consumer(ctx, j.advisoryStream(), j.opts.Consumer)
	if err != nil {
		if ctx.Err() == nil {
			j.opts.Logger.Error("dead-letter loop cannot start; entries over MaxDeliver stay visible in the advisories stream", "stream", j.advisoryStream(), "err", err)
		}
		return
	}
	for ctx.Err() == nil {
		b, err := cons.Fetch(16, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			wait(ctx, time.Second)
			continue
		}
		for m := range b.Messages() {
			j.deadLetter(ctx, m)
		}
	}
}

func (j *Journal) deadLetter(ctx context.Context, m jetstream.Msg) {
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries int    `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data(), &adv); err != nil || adv.StreamSeq == 0 {
		j.opts.Logger.Error("unreadable max-deliveries advisory; dropped", "err", err)
		_ = m.Term()
		return
	}
	raw, err := j.stream.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		j.opts.Logger.Error("entry over MaxDeliver is no longer in the stream", "seq", adv.StreamSeq)
		_ = m.Ack()
		return
	}
	if err != nil {
		_ = m.NakWithDelay(5 * time.Second)
		return
	}
	e, err := decode(raw.Sequence, raw.Data)
	if err != nil {
		j.opts.Logger.Error("entry over MaxDeliver is not a formd entry", "seq", adv.StreamSeq, "err", err)
		_ = m.Ack()
		return
	}
	e.Deliveries = adv.Deliveries
	reason := fmt.Sprintf("delivered %d times without a decision (journal MaxDeliver)", adv.Deliveries)
	if j.opts.DeadLetter == nil {
		j.opts.Logger.Error("entry over MaxDeliver and no dead-letter recorder; replay it", "form", e.Form, "seq", e.Seq)
		_ = m.Ack()
		return
	}
	if err := j.opts.DeadLetter(ctx, e, reason, adv.Deliveries); err != nil {
		j.opts.Logger.Warn("recording a dead letter failed; will retry", "form", e.Form, "seq", e.Seq, "err", err)
		_ = m.NakWithDelay(5 * time.Second)
		return
	}
	j.opts.Logger.Error("entry dead-lettered by the journal", "form", e.Form, "seq", e.Seq, "deliveries", adv.Deliveries)
	_ = m.Ack()
}

// Close stops the loops, hands the entries this instance holds back to the
// server for immediate redelivery (to another instance, or to this one
// after a restart), and closes the connection.
func (j *Journal) Close() error {
	j.mu.Lock()
	if j.closed {
		j.mu.Unlock()
		return nil
	}
	j.closed = true
	j.mu.Unlock()
	j.stop()
	j.bg.Wait()
	j.drainers.Wait()
	j.mu.Lock()
	held := j.inflight
	j.inflight = map[uint64]*flight{}
	j.mu.Unlock()
	for _, f := range held {
		_ = f.msg.Nak()
	}
	select {
	case <-j.js.PublishAsyncComplete():
	case <-time.After(j.opts.PublishTimeout):
		j.opts.Logger.Warn("closing the journal with asynchronous appends unconfirmed")
	}
	err := j.nc.FlushTimeout(5 * time.Second)
	j.nc.Close()
	if err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		return fmt.Errorf("close nats journal: %w", err)
	}
	return nil
}

// checkDurability reads the stream's replicas and the servers' fsync
// setting, through the system account if this connection may ask it, or
// else the monitoring endpoints.
func (j *Journal) checkDurability(ctx context.Context) Durability {
	var d Durability
	if si := j.stream.CachedInfo(); si != nil {
		d.Replicas = si.Config.Replicas
	}
	if d.Replicas < 3 {
		d.Lax = append(d.Lax, fmt.Sprintf("the stream has %d replica(s): one server's disk holds acknowledged entries; use 3 replicas on a 3-node cluster (--nats-replicas 3)", d.Replicas))
	}
	syncs, err := j.serverSync(ctx)
	switch {
	case err != nil:
		d.Lax = append(d.Lax, "the servers' sync_interval could not be read ("+err.Error()+"); make sure every server has jetstream { sync_interval: always }, and give --nats-monitor so formd can check")
	default:
		d.SyncKnown, d.SyncAlways = true, true
		for server, always := range syncs {
			if !always {
				d.SyncAlways = false
				d.Lax = append(d.Lax, "server "+server+" does not fsync each write: set jetstream { sync_interval: always }")
			}
		}
	}
	return d
}

// varz is the part of a server's /varz formd reads.
type varz struct {
	Name      string `json:"server_name"`
	JetStream struct {
		Config *struct {
			SyncAlways bool `json:"sync_always"`
		} `json:"config"`
	} `json:"jetstream"`
}

func (j *Journal) serverSync(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	// Through the system account: every server answers a ping.
	inbox := nats.NewInbox()
	sub, err := j.nc.SubscribeSync(inbox)
	if err == nil {
		defer sub.Unsubscribe() //nolint:errcheck // best effort
		if err := j.nc.PublishRequest("$SYS.REQ.SERVER.PING.VARZ", inbox, nil); err == nil {
			for {
				m, err := sub.NextMsg(500 * time.Millisecond)
				if err != nil {
					break
				}
				var resp struct {
					Data varz `json:"data"`
				}
				if json.Unmarshal(m.Data, &resp) == nil && resp.Data.JetStream.Config != nil {
					out[resp.Data.Name] = resp.Data.JetStream.Config.SyncAlways
				}
			}
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	if len(j.opts.MonitorURLs) == 0 {
		return nil, errors.New("not a system account user and no monitoring URL given")
	}
	client := &http.Client{Timeout: 3 * time.Second}
	for _, u := range j.opts.MonitorURLs {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/varz", nil)
		if err != nil {
			return nil, fmt.Errorf("monitoring URL %s: %w", u, err)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, fmt.Errorf("monitoring URL %s: %w", u, err)
		}
		var v varz
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if err != nil || v.JetStream.Config == nil {
			return nil, fmt.Errorf("monitoring URL %s: no JetStream settings in /varz", u)
		}
		out[v.Name] = v.JetStream.Config.SyncAlways
	}
	return out, nil
}

func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// redact hides a password in a NATS URL for messages.
func redact(url string) string {
	if i := strings.Index(url, "@"); i >= 0 {
		if j := strings.Index(url, "://"); j >= 0 && j < i {
			return url[:j+3] + "***" + url[i:]
		}
	}
	return url
}
