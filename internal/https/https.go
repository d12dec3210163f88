// Package https is how formd terminates TLS itself: the certificate an
// owner manages (reloaded on SIGHUP or when its files change), or
// certificates over ACME with golang.org/x/crypto/acme/autocert, the
// plain-HTTP redirect and ACME challenges, HSTS, and the side listeners.
// Package server wires it into an instance.
package https

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"
)

// Listeners are the sockets one instance answers on.
type Listeners struct {
	// Public takes the API, the hosted pages and the console (--addr);
	// under TLS it speaks HTTPS (HTTP/2 or HTTP/1.1).
	Public net.Listener
	// HTTP answers ACME HTTP-01 challenges and redirects everything else
	// to https (--http-addr); nil for none.
	HTTP net.Listener
	// Metrics serves /metrics (--metrics-addr); nil for none.
	Metrics net.Listener
}

// Listen binds the addresses the settings name. A public or HTTP address
// that cannot be bound is an error naming its setting; a metrics address
// that cannot be bound is logged and formd serves without it, since
// Prometheus then reports the target down.
func Listen(cfg config.Config, log *slog.Logger) (Listeners, error) {
	var ls Listeners
	var err error
	if ls.Public, err = listen("addr", cfg.Addr); err != nil {
		return ls, err
	}
	if cfg.TLS() && cfg.HTTPAddr != "" {
		if ls.HTTP, err = listen("http-addr", cfg.HTTPAddr); err != nil {
			ls.Public.Close()
			return Listeners{}, fmt.Errorf("%w; or --http-addr off to answer on HTTPS alone", err)
		}
	}
	if cfg.MetricsAddr != "" {
		if ls.Metrics, err = listen("metrics-addr", cfg.MetricsAddr); err != nil {
			log.Error("/metrics not served", "err", err)
		}
	}
	return ls, nil
}

// listen binds addr for a setting, with an error that names the setting and,
// for a port below 1024 refused for want of privilege, what would allow it.
func listen(setting, addr string) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err == nil {
		return ln, nil
	}
	return nil, listenError(setting, addr, err)
}

func listenError(setting, addr string, err error) error {
	where := fmt.Sprintf("listen on %s (--%s, %s)", addr, setting, config.Env(setting))
	_, p, _ := net.SplitHostPort(addr)
	port, _ := strconv.Atoi(p)
	if errors.Is(err, syscall.EACCES) && port < 1024 {
		return fmt.Errorf("%s: port %d is below 1024 and this process may not bind it: run formd with the CAP_NET_BIND_SERVICE capability "+
			"(AmbientCapabilities=CAP_NET_BIND_SERVICE in its systemd unit, or sudo setcap cap_net_bind_service=+ep /path/to/formd), "+
			"or choose a port from 1024 up: %w", where, port, err)
	}
	return fmt.Errorf("%s: %w", where, err)
}

// tlsMetrics are the certificate series: when each certificate expires,
// for the alert that fires weeks before, and how often getting or
// reloading one failed.
type tlsMetrics struct {
	errors *prometheus.CounterVec
	expiry func() map[string]time.Time
}

func (m *tlsMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- expiryDesc
	m.errors.Describe(ch)
}

func (m *tlsMetrics) Collect(ch chan<- prometheus.Metric) {
	for domain, at := range m.expiry() {
		v := 0.0
		if !at.IsZero() {
			v = float64(at.Unix())
		}
		ch <- prometheus.MustNewConstMetric(expiryDesc, prometheus.GaugeValue, v, domain)
	}
	m.errors.Collect(ch)
}

var expiryDesc = prometheus.NewDesc("formd_tls_cert_expiry_timestamp_seconds",
	"When the certificate served for a domain expires, in Unix seconds; 0 while there is none (not yet obtained, or unreadable).",
	[]string{"domain"}, nil)

// source is where handshakes get their certificate: an owner's files
// (fileCert) or ACME (acmeCert). run keeps them fresh until ctx ends.
type source interface {
	GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error)
	run(ctx context.Context)
	expiry() map[string]time.Time
}

// Certificates are what an instance that terminates TLS itself serves:
// the TLS configuration of its public listener, what keeps the
// certificates fresh (Run), and the plain-HTTP side's handler (Redirect).
type Certificates struct {
	conf *tls.Config
	src  source
}

// Open prepares the certificates the settings ask for (--tls-cert and
// --tls-key, or --tls-domain over ACME) and registers their metrics; nil
// when formd does not terminate TLS. A certificate pair that does not
// load is an error naming the settings.
func Open(cfg config.Config, log *slog.Logger, reg prometheus.Registerer) (*Certificates, error) {
	if !cfg.TLS() {
		return nil, nil
	}
	m := &tlsMetrics{errors: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "formd_tls_cert_errors_total",
		Help: "Certificates that could not be obtained (source acme) or reloaded (source file); the certificate served before stays.",
	}, []string{"source"})}
	c := &Certificates{}
	if cfg.TLSCert != "" {
		fc, err := newFileCert(cfg.TLSCert, cfg.TLSKey, cfg.TLSCheckEvery, log, m.errors.WithLabelValues("file"))
		if err != nil {
			return nil, err
		}
		c.src = fc
		c.conf = &tls.Config{GetCertificate: fc.GetCertificate}
	} else {
		ac, err := newACMECert(cfg, log, m.errors.WithLabelValues("acme"))
		if err != nil {
			return nil, err
		}
		c.src = ac
		c.conf = ac.m.TLSConfig()
		c.conf.GetCertificate = ac.GetCertificate
	}
	c.conf.MinVersion = tls.VersionTLS12
	m.expiry = c.src.expiry
	reg.MustRegister(m)
	return c, nil
}

// Config is the public listener's TLS configuration (HTTP/2 and
// HTTP/1.1; ACME's TLS-ALPN-01 too when certificates come over ACME).
func (c *Certificates) Config() *tls.Config { return c.conf }

// Run keeps the certificates fresh until ctx ends: an owner's pair is
// read again on SIGHUP and when its files change; ACME certificates are
// obtained at start and renewed by autocert.
func (c *Certificates) Run(ctx context.Context) { c.src.run(ctx) }

// fileCert serves a certificate pair the owner manages. A new pair is
// read on SIGHUP and when either file changes, and swapped in atomically:
// handshakes in progress and open connections are untouched. A pair that
// does not load leaves the one before in place.
type fileCert struct {
	certPath, keyPath string
	every             time.Duration
	log               *slog.Logger
	errs              prometheus.Counter
	cur               atomic.Pointer[tls.Certificate]
	mu                sync.Mutex // serializes reloads; guards seen
	seen              string     // the files' stamp at the last load attempt
}

func newFileCert(certPath, keyPath string, every time.Duration, log *slog.Logger, errs prometheus.Counter) (*fileCert, error) {
	f := &fileCert{certPath: certPath, keyPath: keyPath, every: every, log: log, errs: errs}
	f.seen = f.stamp()
	c, err := loadPair(certPath, keyPath)
	if err != nil {
		return nil, err
	}
	if time.Now().After(c.Leaf.NotAfter) {
		log.Warn("the certificate of --tls-cert has expired; browsers will refuse it", "file", certPath, "not_after", c.Leaf.NotAfter)
	}
	f.cur.Store(c)
	return f, nil
}

// loadPair reads and checks a certificate pair, with errors that name the
// setting at fault.
func loadPair(certPath, keyPath string) (*tls.Certificate, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, fmt.Errorf("setting tls-cert (--tls-cert, FORMD_TLS_CERT): %w", err)
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, fmt.Errorf("setting tls-key (--tls-key, FORMD_TLS_KEY): %w", err)
	}
	if b, _ := pem.Decode(certPEM); b == nil || b.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("setting tls-cert (--tls-cert, FORMD_TLS_CERT): %s holds no PEM certificate (want a block that begins with -----BEGIN CERTIFICATE-----)", certPath)
	} else if _, err := x509.ParseCertificate(b.Bytes); err != nil {
		return nil, fmt.Errorf("setting tls-cert (--tls-cert, FORMD_TLS_CERT): %s: the certificate does not parse: %w", certPath, err)
	}
	if b, _ := pem.Decode(keyPEM); b == nil || !strings.HasSuffix(b.Type, "PRIVATE KEY") {
		return nil, fmt.Errorf("setting tls-key (--tls-key, FORMD_TLS_KEY): %s holds no PEM private key (want a block that begins with -----BEGIN PRIVATE KEY-----)", keyPath)
	}
	c, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("settings tls-cert and tls-key (--tls-cert %s, --tls-key %s): %w", certPath, keyPath, err)
	}
	return &c, nil
}

func (f *fileCert) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return f.cur.Load(), nil
}

// stamp identifies the files' contents cheaply: size and modification
// time of each, through symbolic links (a Kubernetes secret swaps a link).
func (f *fileCert) stamp() string {
	var b strings.Builder
	for _, p := range []string{f.certPath, f.keyPath} {
		if fi, err := os.Stat(p); err == nil {
			fmt.Fprintf(&b, "%d/%d;", fi.Size(), fi.ModTime().UnixNano())
		} else {
			b.WriteString("missing;")
		}
	}
	return b.String()
}

// Reload reads the pair again and serves it from the next handshake on;
// a pair that does not load is returned as the error, counted, and the
// certificate before stays.
func (f *fileCert) Reload() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen = f.stamp()
	c, err := loadPair(f.certPath, f.keyPath)
	if err != nil {
		f.errs.Inc()
		return err
	}
	f.cur.Store(c)
	return nil
}

// checkOnce reloads when the files changed since the last attempt, so a
// pair written in two steps (certificate, then key) loads at the second.
func (f *fileCert) checkOnce() (changed bool, err error) {
	f.mu.Lock()
	same := f.stamp() == f.seen
	f.mu.Unlock()
	if same {
		return false, nil
	}
	return true, f.Reload()
}

func (f *fileCert) run(ctx context.Context) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	t := time.NewTicker(f.every)
	defer t.Stop()
	for {
		var changed bool
		var err error
		select {
		case <-ctx.Done():
			return
		case <-hup:
			changed, err = true, f.Reload()
		case <-t.C:
			changed, err = f.checkOnce()
		}
		switch {
		case err != nil:
			f.log.Error("the new certificate pair was not loaded; still serving the one before", "err", err)
		case changed:
			f.log.Info("certificate reloaded", "file", f.certPath, "not_after", f.cur.Load().Leaf.NotAfter)
		}
	}
}

func (f *fileCert) expiry() map[string]time.Time {
	leaf := f.cur.Load().Leaf
	out := map[string]time.Time{}
	names := leaf.DNSNames
	if len(names) == 0 {
		names = []string{leaf.Subject.CommonName}
	}
	for _, n := range names {
		out[n] = leaf.NotAfter
	}
	for _, ip := range leaf.IPAddresses {
		out[ip.String()] = leaf.NotAfter
	}
	return out
}

// acmeCert gets and renews certificates for --tls-domain over ACME with
// golang.org/x/crypto/acme/autocert: certificates and the account key in
// --data/acme (files 0600, directory 0700), renewed when a third of their
// life is left (at most 30 days before expiry) and retried every 30 to 60
// minutes while the CA refuses, the old certificate served meanwhile. A
// domain with no certificate yet is tried at start and then with a
// doubling pause up to an hour (visitors' handshakes try too, at most once
// a minute).
type acmeCert struct {
	m       *autocert.Manager
	domains []string
	cache   autocert.DirCache
	http    *http.Client // to the ACME CA
	log     *slog.Logger
	errs    prometheus.Counter
	mu      sync.Mutex
	lastLog map[string]time.Time // per domain, to log a failing handshake once a minute
}

func newACMECert(cfg config.Config, log *slog.Logger, errs prometheus.Counter) (*acmeCert, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	hc := &http.Client{Timeout: time.Minute, Transport: tr}
	if cfg.ACMECARoots != "" {
		raw, err := os.ReadFile(cfg.ACMECARoots)
		if err != nil {
			return nil, fmt.Errorf("setting acme-ca-roots (--acme-ca-roots, FORMD_ACME_CA_ROOTS): %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(raw) {
			return nil, fmt.Errorf("setting acme-ca-roots (--acme-ca-roots, FORMD_ACME_CA_ROOTS): %s holds no PEM certificate", cfg.ACMECARoots)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	cache := autocert.DirCache(filepath.Join(cfg.Data, "acme"))
	a := &acmeCert{domains: cfg.TLSDomains, cache: cache, http: hc, log: log, errs: errs, lastLog: map[string]time.Time{}}
	a.m = &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		Cache:      cache,
		HostPolicy: autocert.HostWhitelist(cfg.TLSDomains...),
		Email:      cfg.ACMEEmail,
		Client:     &acme.Client{DirectoryURL: cfg.ACMECA, HTTPClient: hc, UserAgent: "formd"},
	}
	return a, nil
}

// GetCertificate is autocert's, with failures for the configured domains
// counted and logged (names nobody configured, as scanners send, are
// refused silently).
func (a *acmeCert) GetCertificate(hello *tls.ClientHelloInfo) (*tls.Certificate, error) {
	c, err := a.m.GetCertificate(hello)
	if err != nil && slices.Contains(a.domains, strings.ToLower(strings.TrimSuffix(hello.ServerName, "."))) &&
		!(len(hello.SupportedProtos) == 1 && hello.SupportedProtos[0] == acme.ALPNProto) {
		a.failed(hello.ServerName, err)
	}
	return c, err
}

func (a *acmeCert) failed(domain string, err error) {
	a.errs.Inc()
	a.mu.Lock()
	quiet := time.Since(a.lastLog[domain]) < time.Minute
	if !quiet {
		a.lastLog[domain] = time.Now()
	}
	a.mu.Unlock()
	if !quiet {
		a.log.Error("no certificate for a --tls-domain (FORMD_TLS_DOMAIN): check that the name resolves to this machine, that ports 80 (--http-addr) or 443 (--addr) reach it from the internet, and --acme-ca; the certificate before, if any, is still served",
			"domain", domain, "acme_ca", a.m.Client.DirectoryURL, "err", err)
	}
}

// hello is a handshake as a modern browser starts it, to get an ECDSA
// certificate for domain outside a handshake.
func hello(domain string) *tls.ClientHelloInfo {
	return &tls.ClientHelloInfo{
		ServerName:        domain,
		CipherSuites:      []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
		SignatureSchemes:  []tls.SignatureScheme{tls.ECDSAWithP256AndSHA256},
		SupportedCurves:   []tls.CurveID{tls.CurveP256},
		SupportedVersions: []uint16{tls.VersionTLS13, tls.VersionTLS12},
	}
}

// run gets each domain's certificate now rather than at its first
// visitor, so that a refusal shows at start, and keeps trying one that
// fails with a doubling pause (from a minute up to an hour), which stays
// well inside Let's Encrypt's limit of 5 failed validations an hour.
// Renewals are autocert's, from the first certificate on.
func (a *acmeCert) run(ctx context.Context) {
	var wg sync.WaitGroup
	for _, d := range a.domains {
		wg.Go(func() {
			for pause := time.Minute; ; pause = min(2*pause, time.Hour) {
				if _, err := a.GetCertificate(hello(d)); err == nil {
					return
				}
				select {
				case <-ctx.Done():
					return
				case <-time.After(pause):
				}
			}
		})
	}
	<-ctx.Done()
	// An attempt in progress cannot be cancelled (autocert bounds each
	// at 5 minutes); a shutdown does not wait that long for it.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		a.log.Warn("shutting down with a certificate request to the ACME CA still in progress")
	}
	a.http.CloseIdleConnections()
}

// expiry reads each domain's certificate from the cache, where autocert
// keeps it (the ECDSA one under the domain's name, the RSA one under
// name+rsa), as the private key's PEM block followed by the chain's.
func (a *acmeCert) expiry() map[string]time.Time {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	out := map[string]time.Time{}
	for _, d := range a.domains {
		out[d] = time.Time{}
		for _, key := range []string{d, d + "+rsa"} {
			raw, err := a.cache.Get(ctx, key)
			if err != nil {
				continue
			}
			for b, rest := pem.Decode(raw); b != nil; b, rest = pem.Decode(rest) {
				if b.Type != "CERTIFICATE" {
					continue
				}
				if leaf, err := x509.ParseCertificate(b.Bytes); err == nil && leaf.NotAfter.After(out[d]) {
					out[d] = leaf.NotAfter
				}
				break
			}
		}
	}
	return out
}

// Redirect answers the plain-HTTP address under TLS: ACME HTTP-01
// challenges (when c's certificates come over ACME), and for everything else
// a permanent redirect to the same path over https on the public port.
// 308 keeps the method and body, so a form posted to http:// is posted
// again to https:// rather than lost.
func (c *Certificates) Redirect(public net.Addr) http.Handler {
	port := ""
	if a, ok := public.(*net.TCPAddr); ok && a.Port != 443 {
		port = strconv.Itoa(a.Port)
	}
	redirect := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if host == "" {
			http.Error(w, "use https", http.StatusBadRequest)
			return
		}
		if port != "" {
			host = net.JoinHostPort(host, port)
		}
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
	if ac, ok := c.acme(); ok {
		// autocert checks the Host header against the domains as it is,
		// and a client on another port than 80 (a test CA's validation)
		// sends the port with it.
		acme := ac.m.HTTPHandler(redirect)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if h, _, err := net.SplitHostPort(r.Host); err == nil {
				r = r.Clone(r.Context())
				r.Host = h
			}
			acme.ServeHTTP(w, r)
		})
	}
	return redirect
}

// acme is c's ACME source, if its certificates come over ACME.
func (c *Certificates) acme() (*acmeCert, bool) {
	if c == nil {
		return nil, false
	}
	ac, ok := c.src.(*acmeCert)
	return ac, ok
}

// IsHTTPS says whether a request reached formd over HTTPS: its own TLS,
// or a trusted proxy's that says so with X-Forwarded-Proto or Forwarded
// (the value the nearest proxy added, as it is the one we trust).
func IsHTTPS(r *http.Request, trusted []netip.Prefix) bool {
	if r.TLS != nil {
		return true
	}
	if !fromTrusted(r, trusted) {
		return false
	}
	if v := r.Header.Values("X-Forwarded-Proto"); len(v) > 0 {
		hops := strings.Split(strings.Join(v, ","), ",")
		return strings.EqualFold(strings.TrimSpace(hops[len(hops)-1]), "https")
	}
	if v := r.Header.Values("Forwarded"); len(v) > 0 {
		elems := strings.Split(strings.Join(v, ","), ",")
		for _, pair := range strings.Split(elems[len(elems)-1], ";") {
			k, val, _ := strings.Cut(strings.TrimSpace(pair), "=")
			if strings.EqualFold(k, "proto") {
				return strings.EqualFold(strings.Trim(val, `"`), "https")
			}
		}
	}
	return false
}

// fromTrusted says whether the TCP peer is one of the trusted proxies.
func fromTrusted(r *http.Request, trusted []netip.Prefix) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return false
	}
	for _, p := range trusted {
		if p.Contains(a.Unmap()) {
			return true
		}
	}
	return false
}

// WithHSTS sends Strict-Transport-Security on every HTTPS answer, so that
// a browser that once came over https never tries plain http again.
func WithHSTS(next http.Handler, maxAge time.Duration, trusted []netip.Prefix) http.Handler {
	if maxAge <= 0 {
		return next
	}
	value := "max-age=" + strconv.FormatInt(int64(maxAge/time.Second), 10)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if IsHTTPS(r, trusted) {
			w.Header().Set("Strict-Transport-Security", value)
		}
		next.ServeHTTP(w, r)
	})
}

// StartSide serves the side listeners of ls, the plain-HTTP redirect
// (with c's ACME challenges; c may be nil) and metrics on /metrics, until
// the returned function closes them and waits.
func StartSide(ls Listeners, c *Certificates, metrics http.Handler, log *slog.Logger) (stop func()) {
	var servers []*http.Server
	var wg sync.WaitGroup
	serve := func(ln net.Listener, h http.Handler, what string) {
		srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 30 * time.Second, WriteTimeout: time.Minute,
			IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10, ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)}
		servers = append(servers, srv)
		log.Info("formd serving "+what, "addr", ln.Addr().String())
		wg.Go(func() {
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				log.Error("serving "+what+" stopped", "addr", ln.Addr().String(), "err", err)
			}
		})
	}
	if ls.HTTP != nil {
		serve(ls.HTTP, c.Redirect(ls.Public.Addr()), "redirects to https and ACME challenges")
	}
	if ls.Metrics != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics)
		serve(ls.Metrics, mux, "/metrics")
	}
	return func() {
		for _, srv := range servers {
			srv.Close()
		}
		wg.Wait()
	}
}

// ErrorLog is the public server's error log: failed TLS handshakes
// (scanners, clients that give up, old browsers), which an address on the
// internet sees all day, at debug; everything else at warn.
func ErrorLog(l *slog.Logger) *log.Logger {
	return log.New(errorLogWriter{l}, "", 0)
}

type errorLogWriter struct{ l *slog.Logger }

func (w errorLogWriter) Write(p []byte) (int, error) {
	msg := strings.TrimSpace(string(p))
	level := slog.LevelWarn
	if strings.HasPrefix(msg, "http: TLS handshake error") {
		level = slog.LevelDebug
	}
	w.l.Log(context.Background(), level, msg)
	return len(p), nil
}
