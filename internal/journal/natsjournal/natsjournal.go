// Package natsjournal is the journal driver for several formd instances: a
// NATS JetStream stream that every instance appends to, and one durable
// pull consumer that every instance's processor shares.
//
// Subjects are <prefix>._.<form>.<keyhash>, so that replay filters by form
// on the server, and so that the stream itself keeps (form, key) unique:
// every append expects no message yet on <prefix>.*.<form>.<keyhash> and
// the server refuses it atomically otherwise (and the stream allows one
// message per subject, MaxMsgsPerSubject 1 with DiscardNewPerSubject). That
// rule has no time window, unlike Nats-Msg-Id, which every append also
// carries so that a retry inside the window is answered as a duplicate
// without an error. Either way, a duplicate reports the first entry, read
// back from the stream, fingerprint included. The site token is "_" for
// every entry, so a form that moves to another site keeps its subjects;
// earlier releases wrote the form's site there, and the wildcard finds
// their entries as well.
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
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

var _ journal.Journal = (*Journal)(nil)

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
	// FetchLinger is how long a fetch that got one entry waits for more
	// before it takes what is ready: the entries arriving meanwhile make
	// one batch, one store transaction, instead of one each. Default 5ms;
	// negative for none.
	FetchLinger time.Duration
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

// The defaults of the settings --nats-stream and --nats-ack-wait.
const (
	DefaultStream  = "FORMD"
	DefaultAckWait = 30 * time.Second
)

func (o *Options) setDefaults() {
	if o.Stream == "" {
		o.Stream = DefaultStream
	}
	if o.Consumer == "" {
		o.Consumer = "processor"
	}
	if o.AckWait <= 0 {
		o.AckWait = DefaultAckWait
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
		o.QueueSize = journal.DefaultQueueSize
	}
	if o.PublishTimeout <= 0 {
		o.PublishTimeout = 5 * time.Second
	}
	if o.FetchWait <= 0 {
		o.FetchWait = time.Second
	}
	if o.FetchLinger == 0 {
		o.FetchLinger = 5 * time.Millisecond
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
	opts   Options
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	cons   jetstream.Consumer
	prefix string
	slots  chan struct{} // appends in flight
	// pulling is held by the one fetch of this instance that asks the
	// server (consumer.go); backlog says its last pull was a full batch.
	pulling chan struct{}
	backlog bool
	durable Durability

	stop context.CancelFunc
	bg   sync.WaitGroup
	// drainers hand back what abandoned pull requests still deliver;
	// added to under mu while not closed, so Close can wait for them.
	drainers sync.WaitGroup

	mu       sync.Mutex
	closed   bool
	inflight map[uint64]*flight

	// queued are async appends the stream has not answered for yet, by
	// msgID: until it does, this instance finds them by Lookup and reports
	// them to an append of their key, as if they were written.
	queuedMu sync.Mutex
	queued   map[string]journal.Entry
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
		pulling:  make(chan struct{}, 1),
		inflight: map[uint64]*flight{},
		queued:   map[string]journal.Entry{},
	}
	j.js, err = jetstream.New(nc,
		jetstream.WithPublishAsyncMaxPending(opts.QueueSize),
		jetstream.WithPublishAsyncAckHandler(func(_ jetstream.JetStream, m *nats.Msg, _ *jetstream.PubAck) {
			j.unqueue(m.Header.Get(jetstream.MsgIDHeader))
		}),
		jetstream.WithPublishAsyncErrHandler(func(_ jetstream.JetStream, m *nats.Msg, err error) {
			j.unqueue(m.Header.Get(jetstream.MsgIDHeader))
			if isKeyTaken(err) {
				// Another instance journaled the key meanwhile; its entry
				// is the one that stands.
				opts.Logger.Info("asynchronous journal append of a key already journaled; the first entry stands", "subject", m.Subject)
				return
			}
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
		opts.Logger.Warn("NATS JETSTREAM DURABILITY IS LAX: acknowledged submissions can be lost if a NATS server crashes or loses power; see docs/instances.md, \"Durability: what to configure\"",
			"stream", opts.Stream, "replicas", j.durable.Replicas, "problems", strings.Join(j.durable.Lax, "; "))
	}
	j.bg.Go(func() { j.leaseLoop(bgCtx) })
	j.bg.Go(func() { j.deadLetterLoop(bgCtx) })
	return j, nil
}

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
	var st jetstream.Stream
	err := transient(ctx, func() (err error) {
		st, err = j.js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
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
		return err
	})
	if err != nil {
		return fmt.Errorf("create stream %s (replicas %d): %w", j.opts.Stream, replicas, err)
	}
	j.stream = st
	err = transient(ctx, func() (err error) {
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
		return err
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

// transient runs a JetStream API call again, a few times within ctx, when
// the server answers it with a transient failure (a 5xx: a cluster
// electing a leader, a store it could not make just then), as a client of
// a remote API should; any other error, or the last, is returned.
func transient(ctx context.Context, call func() error) error {
	var err error
	for attempt := range 5 {
		if attempt > 0 {
			t := time.NewTimer(time.Duration(attempt*attempt) * 100 * time.Millisecond)
			select {
			case <-ctx.Done():
				t.Stop()
				return err
			case <-t.C:
			}
		}
		err = call()
		var apiErr *jetstream.APIError
		if err == nil || !errors.As(err, &apiErr) || apiErr.Code < 500 {
			return err
		}
	}
	return err
}

func (j *Journal) isClosed() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.closed
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

// redact hides a password in a NATS URL for messages.
func redact(url string) string {
	if i := strings.Index(url, "@"); i >= 0 {
		if j := strings.Index(url, "://"); j >= 0 && j < i {
			return url[:j+3] + "***" + url[i:]
		}
	}
	return url
}
