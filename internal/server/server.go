// Package server wires one formd instance together from its settings: the
// journal and store drivers, the form registry, the processor, and the HTTP
// routes (public API, admin API, hosted pages, health and metrics). It owns
// the order of start-up and of graceful shutdown.
package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/accounts/sso"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/admin/agent"
	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/console"
	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/erasure"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/hosted"
	"github.com/formd/formd/internal/https"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/replay"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads"
	"github.com/formd/formd/internal/uploads/links"
	"github.com/formd/formd/internal/webhooks"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is one formd instance.
type Server struct {
	cfg     config.Config
	log     *slog.Logger
	Journal journal.Journal
	Store   Store
	Forms   *form.Registry
	// Hasher keys fingerprints and claims with the installation's secret.
	Hasher    *form.Hasher
	proc      *processor.Processor
	notify    *processor.Notifier
	retention *erasure.Retention
	// refusals tallies what intake turned away, written every second.
	refusals *intake.RefusalTally
	outbox   *outbox.Dispatcher
	arrivals *intake.ArrivalBatcher
	mailer   *email.Mailer // nil without --smtp; its idle connections closed when the outbox stops
	// admin runs the audit and replay jobs, stopped before the drivers
	// close (closeDrivers).
	admin *admin.Handler
	// Uploads takes file fields' bytes (package uploads); Links signs
	// the links owners download them through.
	Uploads *uploads.Service
	Links   *links.Signer
	backups backups
	// Guard checks webhook addresses, with --webhook-allow.
	Guard   *webhooks.Guard
	unlock  func() // releases the data directory's lock
	handler http.Handler
	metrics http.Handler
	// certs are set when formd terminates TLS itself.
	certs *https.Certificates
	ready atomic.Bool
	// Accounts are who may use the admin API and the console.
	Accounts *accounts.Service
	// NewAdminToken is the admin token issued on this start, to be
	// printed: only by the one start (of every instance on the store, ever)
	// that the store let issue it; empty on every other.
	NewAdminToken string
	// SetupCode is the one-time code of the setup link that makes the
	// first account, while there is none: issued by one start only, and
	// again once it has expired; empty on every other.
	SetupCode string
	// SetupPending says a setup link issued by another start (or
	// instance) is still live, so this one printed none.
	SetupPending bool
	// Instance is this start's id, made at open: the entries whose
	// requests wait here name it, and the instances deciding them
	// announce the outcomes on its subject only (outcomes.go).
	Instance string
}

// Open opens the drivers, makes the admin token on first start, applies
// the --forms file and loads the forms. It starts nothing yet.
func Open(ctx context.Context, cfg config.Config, log *slog.Logger) (*Server, error) {
	unlock := func() {}
	if cfg.JournalDriver().OneInstance {
		var err error
		if unlock, err = lockData(cfg.Data); err != nil {
			return nil, err
		}
	}
	j, st, err := OpenDrivers(ctx, cfg, log)
	if err != nil {
		unlock()
		return nil, err
	}
	s, err := OpenWith(ctx, cfg, log, j, st)
	if err != nil {
		unlock()
		return nil, err
	}
	s.unlock = unlock
	return s, nil
}

// OpenWith is Open on drivers the caller opened (tests wrap them to inject
// faults). The server owns them from here: Close closes them, also when
// OpenWith fails.
func OpenWith(ctx context.Context, cfg config.Config, log *slog.Logger, j journal.Journal, st Store) (*Server, error) {
	s := &Server{cfg: cfg, log: log, Journal: j, Store: st, Instance: newInstanceID()}
	if err := s.open(ctx, reg()); err != nil {
		s.closeDrivers()
		return nil, err
	}
	return s, nil
}

// open prepares the server on its drivers: the secret, the forms, the
// admin token and setup link (once everything else is sound, so that a
// start that fails never consumes them), and the routes.
func (s *Server) open(ctx context.Context, reg *prometheus.Registry) error {
	cfg, log := s.cfg, s.log
	secret, err := InstallationSecret(ctx, cfg, s.Store)
	if err != nil {
		return err
	}
	s.Hasher = form.NewHasher(secret)
	s.Guard = webhooks.NewGuard(cfg.WebhookAllow)
	if cfg.Forms != "" {
		if _, err := ApplyFormsFile(ctx, s.Store, cfg.Forms, s.Guard.CheckURL); err != nil {
			return fmt.Errorf("--forms %s (FORMD_FORMS): %w", cfg.Forms, err)
		}
	}
	s.Forms = form.NewRegistry(s.Store, log)
	if err := s.Forms.Refresh(ctx); err != nil {
		return err
	}
	if err := s.upgradeHashes(ctx); err != nil {
		return err
	}
	// A request over HTTPS, formd's own or a trusted proxy's, gets a
	// Secure session cookie; so does every request when the public URL
	// says https.
	s.Accounts = accounts.New(s.Store, accounts.Config{
		SecureCookies: strings.HasPrefix(cfg.PublicURL, "https://"),
		IsHTTPS:       func(r *http.Request) bool { return https.IsHTTPS(r, cfg.TrustedProxies) },
		DeviceKey:     deviceKey(secret),
		PasswordsOff:  !cfg.PasswordSignIn,
		BreakGlass:    cfg.BreakGlass,
	})
	var signOn *sso.Provider
	if cfg.OIDC.Enabled() {
		// Discovery at start: a provider that is down or misconfigured is
		// a start-up error naming the setting, not a sign-in page that
		// fails later.
		if signOn, err = sso.Discover(ctx, cfg.OIDC, sso.Options{}); err != nil {
			return err
		}
	}
	// The store's one row decides which start issues the admin token: of
	// several instances starting at once, or a restart, only one prints
	// it (formd token makes a new one), so a printed token never stops
	// working because another start replaced it.
	token, hash := accounts.NewToken()
	issued, err := s.Store.PutToken(ctx, "admin", hash, true)
	if err != nil {
		return fmt.Errorf("make the admin token: %w", err)
	}
	if issued {
		s.NewAdminToken = token
	}
	code, state, err := s.Accounts.SetupCode(ctx, false)
	if err != nil {
		return fmt.Errorf("make the setup link: %w", err)
	}
	if s.certs, err = https.Open(cfg, log, reg); err != nil {
		return err
	}
	s.SetupCode, s.SetupPending = code, state == accounts.SetupPending
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		&journalCollector{j: s.Journal}, &storeCollector{s: s.Store}, &dataFSCollector{dir: cfg.Data})
	s.backups = newBackups(cfg, log, reg)
	s.notify = processor.NewNotifier()
	procOpts := processor.Options{
		Workers: cfg.Workers, BatchSize: cfg.BatchSize, MaxAttempts: cfg.MaxAttempts,
		ReconcileEvery: cfg.ReconcileEvery, StaleAfter: cfg.StaleAfter,
		Logger: log, Metrics: processor.NewMetrics(reg),
	}
	if bus, ok := s.Journal.(journal.OutcomeBus); ok {
		procOpts.Announce = s.announcer(bus)
	}
	if err := s.openOutbox(ctx, reg); err != nil {
		return err
	}
	procOpts.Settled = s.outbox.Wake
	s.proc = processor.New(s.Journal, s.Store, s.notify, procOpts)
	fast, err := wireFastPath(cfg, s.Journal, s.Store, s.proc)
	if err != nil {
		return fmt.Errorf("decide at append (--decide-at-append): %w", err)
	}
	if fast {
		log.Debug("the embedded fast path decides submissions at append")
	}
	pruner, _ := s.Journal.(journal.Pruner)
	s.retention = erasure.NewRetention(s.Forms, s.Store, pruner, time.Now, log, reg)
	notify := s.notify
	// The hosted result page shows a key's status as the status endpoint
	// does (intake.Statuses, below both), and the intake hands the hosted
	// pages plain posts that need a fix.
	if err := s.openUploads(ctx, secret, reg); err != nil {
		return err
	}
	places := store.NewPlacesCache(s.Store, time.Now, cfg.PlacesTTL)
	pages := hosted.New(s.Forms, places, intake.NewStatuses(s.Journal, s.Store), time.Now, log)
	pages.Links = intake.Links{Store: s.Store, Hasher: s.Hasher, Forms: s.Forms, Now: time.Now, Erase: s.ForgetEntries, Audit: s.Accounts}
	pages.Outcomes, pages.Hasher, pages.PublicURL = s.Store, s.Hasher, s.cfg.PublicURL
	pages.MailDrafts = s.cfg.SMTP != nil
	s.refusals = intake.NewRefusalTally(s.Store, time.Now, log)
	// Beacons are written in batches (intake.ArrivalBatcher: a crash loses
	// the last 100 ms of them); the submissions' own path is unchanged.
	s.arrivals = intake.NewArrivalBatcher(s.Store, log)
	in := intake.New(s.Journal, s.Store, s.Forms, notify, intake.Config{
		Refusals:    s.refusals,
		DefaultWait: cfg.DefaultWait, MaxWait: cfg.MaxWait, MaxBody: cfg.MaxBody, RateLimit: cfg.RateLimit,
		TrustedProxies: cfg.TrustedProxies, Instance: s.waitingInstance(), Pages: pages, Places: places, Hasher: s.Hasher, Arrivals: s.arrivals,
		Uploads: s.Uploads, Drafts: s.Store, Participants: s.Store, Erase: s.ForgetEntries, Audit: s.Accounts, Logger: log, Metrics: intake.NewMetrics(reg),
		Proof: intake.Proof{Signer: challenge.NewSigner(secret), Adaptive: challenge.NewAdaptive()},
		// A draft's resume link is e-mailed at once through the outbox's
		// SMTP pool (never queued: the token is not stored).
		DraftMail: s.draftMailer(), DraftBudgets: s.Store, PublicURL: s.cfg.PublicURL,
	})
	mux := http.NewServeMux()
	in.Register(mux)
	s.Uploads.Register(mux)
	s.Uploads.RegisterDownloads(mux, s.Links)
	counter, _ := s.Journal.(journal.FormCounter)
	forgetter, _ := s.Journal.(journal.Forgetter)
	adm := admin.New(admin.Deps{Store: s.Store, Forms: s.Forms, Auth: s.Accounts, Redrive: s.redrive, Forget: s.Forget, Erase: s.ForgetEntries,
		CheckURL: func(raw string) error { return s.Guard.CheckSavedURL(raw, nil) }, Outbox: s.Store, Wake: s.outbox.Wake, Log: log,
		Journal: s.Journal, Counter: counter, Pruner: pruner, Forgetter: forgetter, Accounts: s.Accounts, NewProcessor: s.replayProcessor,
		TrustedProxies: s.cfg.TrustedProxies, Files: s.entryFiles, FilesFor: s.filesFor, SpamReasons: s.Store, Refusals: s.Store,
		Hasher: s.Hasher, TicketsRefused: admin.NewTicketsRefused(reg)})
	// The MCP tools (internal/admin/agent), for an API token only.
	tools := &agent.Tools{Admin: adm, Status: intake.NewStatuses(s.Journal, s.Store).Status}
	adm.MCP = tools.Handler()
	adm.Register(mux)
	s.admin = adm
	cons := console.New(adm, s.Accounts, s.cfg.TrustedProxies, log)
	cons.BackupFailure = s.backups.failure
	cons.PublicURL = s.cfg.PublicURL
	cons.IsHTTPS = func(r *http.Request) bool { return https.IsHTTPS(r, s.cfg.TrustedProxies) }
	cons.Preview = pages.Preview
	if signOn != nil {
		cons.SSO, cons.SSOCreate = signOn, cfg.OIDC.CreateAccounts
	}
	cons.Register(mux)
	pages.Register(mux)
	// /metrics names every form of every site: it is served on
	// --metrics-addr, never on the public address.
	s.metrics = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("ok\n")) //nolint:errcheck // best effort
	})
	mux.HandleFunc("GET /readyz", s.readyz)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		problem.Write(w, r, log, problem.New(problem.CodeNotFound, ""))
	})
	s.handler = https.WithHSTS(mux, cfg.HSTS, cfg.TrustedProxies)
	return nil
}

// reg is a fresh metrics registry for one instance.
func reg() *prometheus.Registry { return prometheus.NewRegistry() }

// Handler is the instance's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// MetricsHandler serves the instance's Prometheus metrics.
func (s *Server) MetricsHandler() http.Handler { return s.metrics }

// Start runs the background work (processor, reconciler, forms refresh)
// until ctx ends; the returned function waits for it to finish.
func (s *Server) Start(ctx context.Context) (wait func()) {
	var wg sync.WaitGroup
	if bus, ok := s.Journal.(journal.OutcomeBus); ok {
		wg.Go(func() { s.listenForOutcomes(ctx, bus) })
	}
	if s.cfg.PollOutcomes > 0 {
		wg.Go(func() { s.pollOutcomes(ctx) })
	}
	if s.certs != nil {
		wg.Go(func() { s.certs.Run(ctx) })
	}
	wg.Go(func() {
		if err := s.proc.Run(ctx); err != nil {
			s.log.Error("processor stopped", "err", err)
		}
	})
	wg.Go(func() { s.Forms.Run(ctx, s.cfg.FormsRefresh) })
	wg.Go(func() { s.retention.Run(ctx, s.cfg.RetentionEvery) })
	wg.Go(func() { s.refusals.Run(ctx, time.Second) })
	wg.Go(func() { s.arrivals.Run(ctx) })
	wg.Go(func() {
		s.outbox.Run(ctx)
		if s.mailer != nil {
			_ = s.mailer.Close()
		}
	})
	wg.Go(func() { s.Uploads.Run(ctx, uploadExpireEvery(s.cfg.UploadExpiry)) })
	if s.backups.schedule != nil {
		wg.Go(func() { s.backups.schedule.Run(ctx) })
	}
	s.ready.Store(true)
	return wg.Wait
}

// Listeners are the sockets one instance answers on (package https).
type Listeners = https.Listeners

// Listen binds the addresses the settings name (https.Listen).
func (s *Server) Listen() (Listeners, error) { return https.Listen(s.cfg, s.log) }

// Serve answers on ln until ctx ends, then shuts down in order: stop taking
// requests and let those in flight finish (the processor still running, so
// they get their outcomes), stop the processor, close the journal (which
// commits what is queued) and the store. Nothing acknowledged is lost: it
// is in the journal, and anything not yet decided is decided on the next
// start.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	return s.ServeOn(ctx, Listeners{Public: ln})
}

// ServeOn is Serve on every listener of ls (see Listen).
func (s *Server) ServeOn(ctx context.Context, ls Listeners) error {
	ln := ls.Public
	bgCtx, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	waitBg := s.Start(bgCtx)
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      s.cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          https.ErrorLog(s.log),
	}
	errc := make(chan error, 1)
	if s.certs != nil {
		// ServeTLS adds h2 to the protocols offered: HTTP/2 under TLS.
		srv.TLSConfig = s.certs.Config()
		go func() { errc <- srv.ServeTLS(ln, "", "") }()
	} else {
		go func() { errc <- srv.Serve(ln) }()
	}
	stopSide := https.StartSide(ls, s.certs, s.metrics, s.log)
	stopDebug := s.startDebug()
	s.log.Info("formd serving", "addr", ln.Addr().String(), "instance", s.Instance, "https", s.certs != nil, "journal", redact(s.cfg.Journal), "store", redact(s.cfg.Store), "forms", len(s.Forms.All()))
	stopSystemd := s.startSystemd(ln.Addr().String())
	var serveErr error
	select {
	case <-ctx.Done():
	case serveErr = <-errc:
	}
	s.ready.Store(false)
	s.log.Info("formd shutting down")
	s.stopping()
	shutCtx, cancel := context.WithTimeout(context.Background(), s.cfg.ShutdownTimeout)
	defer cancel()
	if err := srv.Shutdown(shutCtx); err != nil {
		s.log.Warn("requests still in flight at the shutdown timeout", "err", err)
	}
	stopSide()
	stopDebug()
	stopBg()
	waitBg()
	stopSystemd()
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, s.Close())
}

// startDebug serves pprof on the debug address, when one is set; the
// returned function stops it (cutting a profile in progress) and waits
// until it has stopped. A debug address that cannot be bound is logged
// and does not stop the server: profiles are an aid, not a duty.
func (s *Server) startDebug() (stop func()) {
	if s.cfg.DebugAddr == "" {
		return func() {}
	}
	ln, err := net.Listen("tcp", s.cfg.DebugAddr)
	if err != nil {
		s.log.Warn("debug server", "err", err)
		return func() {}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	dbg := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)}
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := dbg.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			s.log.Warn("debug server", "err", err)
		}
	})
	return func() {
		dbg.Close()
		wg.Wait()
	}
}

// redact hides the password of a driver URL, for logs.
func redact(driver string) string {
	if u, err := url.Parse(driver); err == nil && u.User != nil {
		return u.Redacted()
	}
	return driver
}

// Close closes the journal, then the store.
func (s *Server) Close() error {
	return s.closeDrivers()
}

func (s *Server) closeDrivers() error {
	if s.unlock != nil {
		defer s.unlock()
	}
	if s.admin != nil {
		s.admin.StopJobs()
	}
	var errs []error
	if s.Journal != nil {
		errs = append(errs, s.Journal.Close())
	}
	if s.Store != nil {
		errs = append(errs, s.Store.Close())
	}
	return errors.Join(errs...)
}

func (s *Server) readyz(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
	defer cancel()
	var problems []string
	if !s.ready.Load() {
		problems = append(problems, "not started or shutting down")
	}
	if _, err := s.Journal.Stats(ctx); err != nil {
		problems = append(problems, "journal: "+err.Error())
	} else if w, ok := s.Journal.(journal.Writability); ok {
		if err := w.Writable(ctx); err != nil {
			problems = append(problems, "journal cannot take submissions: "+err.Error())
		}
	}
	if _, err := s.Store.Capacities(ctx); err != nil {
		problems = append(problems, "store: "+err.Error())
	}
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("Cache-Control", "no-store")
	if len(problems) > 0 {
		w.WriteHeader(http.StatusServiceUnavailable)
		for _, p := range problems {
			fmt.Fprintln(w, p)
		}
		return
	}
	fmt.Fprintln(w, "ready")
}

// redrive processes the journal entry of (form, key) again, for a retried
// dead letter.
func (s *Server) redrive(ctx context.Context, formID, key string) error {
	e, ok, err := s.Journal.Lookup(ctx, formID, key)
	if err != nil {
		return fmt.Errorf("redrive: %w", err)
	}
	if !ok {
		return fmt.Errorf("redrive %s/%s: not in the journal", formID, key)
	}
	// One more try, outside the journal's delivery: if it fails again it
	// is dead-lettered again at once rather than left undelivered.
	e.Handouts = s.cfg.MaxAttempts
	return s.proc.Process(ctx, []journal.Entry{e})
}

// Forget erases a person's entries, across forms, from the store and the
// journal.
func (s *Server) Forget(ctx context.Context, p erasure.Person, allow func(site string) bool, dryRun bool) (erasure.Report, error) {
	fg, _ := s.Journal.(journal.Forgetter)
	return erasure.Forget(ctx, s.Store, fg, p, allow, dryRun)
}

// ForgetEntries erases entries named by id (a participant's erasure
// request) from the store and the journal, as Forget erases a person's;
// the person is told by e-mail where their form sends confirmations.
func (s *Server) ForgetEntries(ctx context.Context, entries []store.EntryRef) (erasure.Report, error) {
	fg, _ := s.Journal.(journal.Forgetter)
	tell := store.NoticeFields{}
	for _, e := range entries {
		if field := s.Forms.Get(e.Form).ConfirmField(); field != "" {
			tell[e.Form] = field
		}
	}
	rep, err := erasure.ForgetEntries(ctx, s.Store, fg, entries, tell)
	if rep.Erased > 0 && len(tell) > 0 {
		s.outbox.Wake()
	}
	return rep, err
}

// replayProcessor is a processor for one replay, whose outcomes observe
// counts; requests waiting for a key it decides wake as usual.
func (s *Server) replayProcessor(observe func(store.Outcome)) replay.Processor {
	return processor.New(s.Journal, s.Store, s.notify, processor.Options{Logger: s.log, Observe: observe, MaxAttempts: 1})
}

// Processor is the instance's processor, for replay.
func (s *Server) Processor() *processor.Processor { return s.proc }

// ApplyFormsFile reads definitions from path and stores them; checkURL
// checks webhook addresses (the server's guard).
func ApplyFormsFile(ctx context.Context, st interface {
	PutForms(ctx context.Context, forms []form.Record) error
}, path string, checkURL func(string) error) (form.Set, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return form.Set{}, fmt.Errorf("read forms: %w", err)
	}
	set, err := form.ParseSet(raw, path, checkURL)
	if err != nil {
		return form.Set{}, err
	}
	if err := st.PutForms(ctx, set.Records()); err != nil {
		return form.Set{}, fmt.Errorf("apply forms from %s: %w", path, err)
	}
	return set, nil
}

// draftMailer is the SMTP pool for resume links, or nil without --smtp
// (a nil *email.Mailer would be a non-nil intake.DraftMailer).
func (s *Server) draftMailer() intake.DraftMailer {
	if s.mailer == nil {
		return nil
	}
	return s.mailer
}
