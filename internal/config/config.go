// Package config is formd's one settings struct: documented defaults, filled
// from an optional YAML file, then FORMD_* environment variables, then
// command-line flags (each overriding the one before), and checked once at
// start-up with errors that name the setting and what would be valid.
package config

import (
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/netip"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/accounts/sso"
	"github.com/formd/formd/internal/drivers"
	"github.com/formd/formd/internal/email"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/natsjournal"
	"github.com/formd/formd/internal/outbox"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/clamd"
	"github.com/formd/formd/internal/uploads/s3objects"
	"github.com/formd/formd/internal/webhooks"
	"go.yaml.in/yaml/v3"
)

// Config holds every setting of formd.
type Config struct {
	Addr    string // listen address
	Data    string // directory of the embedded journal and store
	Forms   string // form definitions applied at start-up
	Journal string // "sqlite" or a nats:// URL
	Store   string // "sqlite" or a postgres:// URL

	// PostgresMaxConns bounds an instance's connections to a PostgreSQL
	// store (pool_max_conns in the Store URL takes precedence);
	// SQLiteReaders is the embedded store's pool of read connections
	// beside its one writer.
	PostgresMaxConns int
	SQLiteReaders    int
	// PlacesTTL is how old the free places shown on public form pages
	// may be: they are read from the store at most once per PlacesTTL
	// (decisions never use them).
	PlacesTTL time.Duration

	// The NATS journal's stream, its replicas (0: 3 on a cluster, else 1),
	// how long an instance may hold an entry silently before another gets
	// it, and the servers' monitoring URLs for the durability check.
	NATSStream   string
	NATSReplicas int
	NATSAckWait  time.Duration
	NATSMonitor  []string

	DefaultWait time.Duration
	MaxWait     time.Duration
	MaxBody     int64
	RateLimit   form.RateLimit

	TrustedProxies []netip.Prefix

	Workers     int
	BatchSize   int
	MaxAttempts int
	QueueSize   int
	// JournalMaxSize bounds the sqlite journal's file in bytes; 0 for no
	// bound.
	JournalMaxSize int64
	// DecideAtAppend turns on the embedded fast path: with the sqlite
	// journal and store, a sync entry is decided in the commit that
	// journals it.
	DecideAtAppend bool

	ReconcileEvery  time.Duration
	StaleAfter      time.Duration
	FormsRefresh    time.Duration
	RetentionEvery  time.Duration
	PollOutcomes    time.Duration
	ShutdownTimeout time.Duration
	// WriteTimeout bounds writing one response; 0 means MaxWait + 15s, so
	// that a waiting submission is never cut. A streamed export moves it
	// on as it goes.
	WriteTimeout time.Duration

	// SMTP is the mail server e-mail deliveries go through (nil: none, and
	// e-mail waits); SMTPFrom the sender.
	SMTP     *email.Config
	SMTPFrom mail.Address
	// WebhookAllow lists private addresses webhooks may go to anyway
	// (tests, receivers on the same network).
	WebhookAllow []netip.Prefix
	// DeliveryLease is how long an instance holds a delivery it claimed;
	// another takes it over after that.
	DeliveryLease time.Duration
	// PublicURL is where people reach this server, for links in e-mail.
	PublicURL string

	// Secret keys fingerprints, participant claims and derived keys; nil
	// to use the installation's own (a file under Data, or the PostgreSQL
	// store's).
	Secret []byte

	// UploadExpiry is how long an upload no submission claimed is kept
	// before its bytes are deleted; LinkTTL how long a signed download
	// link of an entry's file works.
	UploadExpiry time.Duration
	LinkTTL      time.Duration
	// UploadLimits bound the uploads no submission has claimed yet, per
	// address (an IPv6 /64) and per form (--upload-address-*,
	// --upload-form-*); UploadReserve is the free space kept under Data
	// below which uploads are refused (507).
	UploadLimits  store.UploadLimits
	UploadReserve int64
	// Clamd, when set, is the ClamAV daemon every upload is scanned by
	// before it can be claimed (unix:///path or tcp://host:port).
	Clamd string
	// UploadsS3 is the bucket complete uploads' bytes live in (--uploads
	// s3://…), shared by every instance; nil keeps them under --data.
	UploadsS3 *s3objects.Location

	LogLevel  slog.Level
	LogFormat string
	// DebugAddr, when set, serves Go's pprof profiles on that address:
	// keep it on loopback.
	DebugAddr string

	// HTTPS: TLSDomains get certificates over ACME from ACMECA (kept under
	// Data), or TLSCert/TLSKey name a pair the owner manages, reloaded on
	// SIGHUP and when the files change (checked every TLSCheckEvery).
	// HTTPAddr answers ACME HTTP-01 challenges and redirects to https
	// under TLS ("" for none). HSTS is the Strict-Transport-Security
	// max-age sent on HTTPS requests (0: none).
	TLSDomains    []string
	TLSCert       string
	TLSKey        string
	TLSCheckEvery time.Duration
	ACMECA        string
	ACMEEmail     string
	ACMECARoots   string
	HTTPAddr      string
	HSTS          time.Duration
	// MetricsAddr serves /metrics ("" for nowhere); the public address
	// never does, since it names every form of every site.
	MetricsAddr string
	// BackupEvery, when set, has the server back up the embedded data
	// into a new directory under BackupDir that often, keeping the
	// newest BackupKeep.
	BackupEvery time.Duration
	BackupDir   string
	BackupKeep  int

	// OIDC is single sign-on for the console through an OpenID Provider
	// (--oidc-*); off while its Issuer is empty.
	OIDC sso.Settings
	// PasswordSignIn false leaves the console to single sign-on, but for
	// BreakGlass: the e-mail of the one owner who may still sign in with
	// a password.
	PasswordSignIn bool
	BreakGlass     string
}

// TLS reports whether formd itself terminates TLS.
func (c Config) TLS() bool { return len(c.TLSDomains) > 0 || c.TLSCert != "" }

// DefaultACMECA is Let's Encrypt's production directory.
const DefaultACMECA = "https://acme-v02.api.letsencrypt.org/directory"

// setting is one configurable value: its flag name (the file key too), its
// environment variable, default and help, and how to set it from text.
type setting struct {
	name, def, usage string
	set              func(c *Config, v string) error
}

// durationText writes a default duration as people write it: 2m, not
// 2m0s. The components that use a setting own its default value; the
// table shows it, so that each value is written once.
func durationText(d time.Duration) string {
	s := d.String()
	for _, zero := range []string{"m0s", "h0m"} {
		if strings.HasSuffix(s, zero) {
			s = strings.TrimSuffix(s, zero[1:])
		}
	}
	return s
}

// Env is the environment variable of a setting.
func Env(name string) string {
	return "FORMD_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

var settings = []setting{
	{"addr", "127.0.0.1:8080", "address to listen on, host:port", func(c *Config, v string) error {
		if err := checkHostPort(v); err != nil {
			return fmt.Errorf("%q is not host:port, such as 127.0.0.1:8080 or :8080", v)
		}
		c.Addr = v
		return nil
	}},
	{"data", "./formd-data", "directory for the embedded journal and store files", func(c *Config, v string) error {
		if v == "" {
			return errors.New("must name a directory, such as ./formd-data")
		}
		c.Data = v
		return nil
	}},
	{"forms", "", "form definitions (YAML or JSON) to apply at start-up", func(c *Config, v string) error {
		c.Forms = v
		return nil
	}},
	{"journal", "sqlite", "journal driver: sqlite (a file under --data) or a nats:// URL", func(c *Config, v string) error {
		if _, err := drivers.Journal(v); err != nil {
			return err
		}
		c.Journal = v
		return nil
	}},
	{"store", "sqlite", "store driver: sqlite (a file under --data) or a postgres:// URL", func(c *Config, v string) error {
		if _, err := drivers.Store(v); err != nil {
			return err
		}
		c.Store = v
		return nil
	}},
	{"postgres-max-conns", "16", "connections each instance keeps at most to a postgres store (pool_max_conns in the --store URL takes precedence); every processor worker holds one while it decides", intSetter(func(c *Config) *int { return &c.PostgresMaxConns }, 1, 1000)},
	{"sqlite-readers", "8", "read connections to the sqlite store (status look-ups, the console, exports) beside its one writer", intSetter(func(c *Config) *int { return &c.SQLiteReaders }, 1, 256)},
	{"places-ttl", "1s", "how old the free places shown on public form pages may be; they are read from the store at most once per this (0s: for every visitor); decisions never use them", durationSetter(func(c *Config) *time.Duration { return &c.PlacesTTL }, 0, time.Minute)},
	{"nats-stream", natsjournal.DefaultStream, "the nats journal's JetStream stream (its subjects are the name in lower case, then .>); every instance of one deployment uses the same", func(c *Config, v string) error {
		if v == "" || strings.ContainsAny(v, ".*> \t/\\") || len(v) > 64 {
			return fmt.Errorf("%q is not a stream name: use up to 64 letters, digits, '-' or '_', such as FORMD", v)
		}
		c.NATSStream = v
		return nil
	}},
	{"nats-replicas", "0", "replicas of the nats journal's stream: 3 on a 3-node cluster for durability (0: 3 when the server is clustered, else 1)", intSetter(func(c *Config) *int { return &c.NATSReplicas }, 0, 5)},
	{"nats-ack-wait", durationText(natsjournal.DefaultAckWait), "how long an instance may hold a nats journal entry without a word (it renews its hold while alive) before another instance gets it", durationSetter(func(c *Config) *time.Duration { return &c.NATSAckWait }, time.Second, 10*time.Minute)},
	{"nats-monitor", "", "comma-separated NATS monitoring URLs (such as http://127.0.0.1:8222), read at start to check that every server fsyncs each write", func(c *Config, v string) error {
		c.NATSMonitor = nil
		for _, u := range strings.Split(v, ",") {
			u = strings.TrimSpace(u)
			if u == "" {
				continue
			}
			if !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
				return fmt.Errorf("%q is not an http:// or https:// URL, such as http://127.0.0.1:8222", u)
			}
			c.NATSMonitor = append(c.NATSMonitor, u)
		}
		return nil
	}},
	{"wait", "5s", "how long a submission waits for its outcome before the answer is 202", durationSetter(func(c *Config) *time.Duration { return &c.DefaultWait }, time.Millisecond, time.Minute)},
	{"max-wait", "30s", "the cap on Prefer: wait=N", durationSetter(func(c *Config) *time.Duration { return &c.MaxWait }, time.Second, 5*time.Minute)},
	{"max-body", "1MiB", "largest request body accepted, in bytes (KiB and MiB suffixes allowed)", func(c *Config, v string) error {
		n, err := parseSize(v)
		if err != nil || n < 1024 || n > 64<<20 {
			return fmt.Errorf("%q is not a size from 1KiB to 64MiB; write bytes such as 1048576, or 512KiB, 1MiB", v)
		}
		c.MaxBody = n
		return nil
	}},
	// The default lets a crowd behind one address register at once (a
	// campus, or a carrier's NAT putting thousands of phones behind one
	// IP: 600 people in the first minute), while one runaway client is
	// still held to 10 new submissions a second per form. Retries of a
	// key and status queries never count.
	{"rate-limit", "600/1m,burst=600", "new submissions per client IP per form: N/DURATION[,burst=B], or off; a form's rate_limit overrides it (retries and status queries never count)", func(c *Config, v string) error {
		rl, err := parseRateLimit(v)
		if err != nil {
			return err
		}
		c.RateLimit = rl
		return nil
	}},
	{"trusted-proxies", "", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For names the client", func(c *Config, v string) error {
		c.TrustedProxies = nil
		for _, s := range strings.Split(v, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			p, err := netip.ParsePrefix(s)
			if err != nil {
				a, aerr := netip.ParseAddr(s)
				if aerr != nil {
					return fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8 or an address", s)
				}
				p = netip.PrefixFrom(a, a.BitLen())
			}
			c.TrustedProxies = append(c.TrustedProxies, p)
		}
		return nil
	}},
	{"workers", "0", "processor workers (0: 1 for the sqlite store, 4 for postgres)", intSetter(func(c *Config) *int { return &c.Workers }, 0, 256)},
	{"batch-size", strconv.Itoa(processor.DefaultBatchSize), "entries decided in one store transaction", intSetter(func(c *Config) *int { return &c.BatchSize }, 1, 10000)},
	{"max-attempts", strconv.Itoa(processor.DefaultMaxAttempts), "attempts of an entry that fails on its own before it is dead-lettered", intSetter(func(c *Config) *int { return &c.MaxAttempts }, 1, 100)},
	{"journal-max-size", "0", "the sqlite journal's largest size, in bytes (KiB, MiB, GiB suffixes allowed): past it submissions get 503 and /readyz says not ready, rather than the disk filling; 0 for no bound", func(c *Config, v string) error {
		if v == "0" {
			c.JournalMaxSize = 0
			return nil
		}
		n, err := parseSize(v)
		if err != nil || n < 1<<20 {
			return fmt.Errorf("%q is not a size of at least 1MiB; write bytes, or 512MiB, 20GiB; or 0 for no bound", v)
		}
		c.JournalMaxSize = n
		return nil
	}},
	{"decide-at-append", "true", "with the sqlite journal and the sqlite store, decide each submission in the commit that journals it (one transaction over both files, no hop through the processor); false sends every entry through the processor, as with other drivers", func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		c.DecideAtAppend = b
		return nil
	}},
	{"queue-size", strconv.Itoa(journal.DefaultQueueSize), "submissions waiting for the journal writer before new ones get 503 overloaded", intSetter(func(c *Config) *int { return &c.QueueSize }, 16, 1<<22)},
	{"reconcile-every", durationText(processor.DefaultReconcileEvery), "how often the reconciler looks for stale entries", durationSetter(func(c *Config) *time.Duration { return &c.ReconcileEvery }, 100*time.Millisecond, time.Hour)},
	{"stale-after", durationText(processor.DefaultStaleAfter), "how long an entry may stay in processing before the reconciler re-drives it", durationSetter(func(c *Config) *time.Duration { return &c.StaleAfter }, time.Second, 24*time.Hour)},
	{"forms-refresh", "500ms", "how often a server reloads changed form definitions from the store", durationSetter(func(c *Config) *time.Duration { return &c.FormsRefresh }, 50*time.Millisecond, time.Minute)},
	{"retention-every", "1h", "how often forms' retention erases old entries' data", durationSetter(func(c *Config) *time.Duration { return &c.RetentionEvery }, time.Second, 7*24*time.Hour)},
	{"poll-outcomes", "0s", "with several instances, how often an instance polls the store, in one query for all its waiting requests, for outcomes whose announcement did not come; it backs off to ten times this while announcements come (0: only local notifications; 100ms for a nats journal)", durationSetter(func(c *Config) *time.Duration { return &c.PollOutcomes }, 0, 10*time.Second)},
	{"write-timeout", "0s", "how long writing one response may take (0: --max-wait plus 15s); a streamed export moves it on as long as the reader keeps reading", durationSetter(func(c *Config) *time.Duration { return &c.WriteTimeout }, 0, time.Hour)},
	{"shutdown-timeout", "30s", "how long SIGTERM waits for requests in flight", durationSetter(func(c *Config) *time.Duration { return &c.ShutdownTimeout }, time.Second, 10*time.Minute)},
	{"smtp", "", "the SMTP server e-mail is sent through: smtp://user:pass@host:587 (STARTTLS when offered) or smtps://…:465 (TLS); without it, e-mail deliveries wait", func(c *Config, v string) error {
		c.SMTP = nil
		if v == "" {
			return nil
		}
		sc, err := email.ParseURL(v)
		if err != nil {
			return err
		}
		c.SMTP = &sc
		return nil
	}},
	{"smtp-from", "formd <formd@localhost>", "the sender of e-mail: an address, with a name if you like, such as 'Spring fair <fair@example.org>'", func(c *Config, v string) error {
		a, err := email.ParseFrom(v)
		if err != nil {
			return err
		}
		c.SMTPFrom = a
		return nil
	}},
	{"webhook-allow", "", "comma-separated addresses or CIDRs (such as 127.0.0.0/8,10.1.2.0/24) that webhooks may go to although they are private, loopback or link-local; without it such endpoints are refused", func(c *Config, v string) error {
		p, err := webhooks.ParseAllow(v)
		if err != nil {
			return err
		}
		c.WebhookAllow = p
		return nil
	}},
	{"delivery-lease", durationText(outbox.DefaultLease), "how long an instance holds a webhook or e-mail delivery it is sending; after that (the instance died) another sends it. Keep it well above a send's timeout (15s)", durationSetter(func(c *Config) *time.Duration { return &c.DeliveryLease }, 2*time.Second, time.Hour)},
	{"public-url", "", "the address people reach this server at, such as https://forms.example.org, for links in e-mail (none when empty)", func(c *Config, v string) error {
		if v != "" {
			u, err := url.Parse(v)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return fmt.Errorf("%q is not an http(s) URL such as https://forms.example.org", v)
			}
		}
		c.PublicURL = strings.TrimRight(v, "/")
		return nil
	}},
	// HTTPS and where /metrics is served.
	{"tls-domain", "", "comma-separated domain names to serve HTTPS for, with certificates obtained and renewed automatically over ACME (kept under --data); the names must resolve to this machine and --http-addr or --addr must be reachable on ports 80/443", func(c *Config, v string) error {
		c.TLSDomains = nil
		for _, d := range strings.Split(v, ",") {
			d = strings.ToLower(strings.TrimSpace(d))
			if d == "" {
				continue
			}
			if err := checkDomain(d); err != nil {
				return err
			}
			c.TLSDomains = append(c.TLSDomains, d)
		}
		return nil
	}},
	{"tls-cert", "", "a PEM certificate (chain) file to serve HTTPS with, with --tls-key; reloaded on SIGHUP and when the file changes", func(c *Config, v string) error {
		c.TLSCert = v
		return nil
	}},
	{"tls-key", "", "the PEM private key of --tls-cert", func(c *Config, v string) error {
		c.TLSKey = v
		return nil
	}},
	{"tls-check-every", "10s", "how often the --tls-cert and --tls-key files are checked for a change", durationSetter(func(c *Config) *time.Duration { return &c.TLSCheckEvery }, 100*time.Millisecond, time.Hour)},
	{"acme-ca", DefaultACMECA, "the ACME directory --tls-domain gets certificates from (Let's Encrypt's staging: https://acme-staging-v02.api.letsencrypt.org/directory, or a company CA)", func(c *Config, v string) error {
		u, err := url.Parse(v)
		if err != nil || u.Scheme != "https" || u.Host == "" {
			return fmt.Errorf("%q is not an https:// URL of an ACME directory, such as %s", v, DefaultACMECA)
		}
		c.ACMECA = v
		return nil
	}},
	{"acme-email", "", "the e-mail address the ACME CA may write to about the certificates (expiry, problems)", func(c *Config, v string) error {
		if v != "" {
			if _, err := mail.ParseAddress(v); err != nil || strings.ContainsAny(v, "<> ") {
				return fmt.Errorf("%q is not an e-mail address such as admin@example.org", v)
			}
		}
		c.ACMEEmail = v
		return nil
	}},
	{"acme-ca-roots", "", "a PEM file of root certificates to trust for the --acme-ca directory besides the system's (a company CA, a test CA)", func(c *Config, v string) error {
		c.ACMECARoots = v
		return nil
	}},
	{"http-addr", ":80", "under HTTPS, the plain-HTTP address that answers ACME challenges and redirects everything else to https (off: none)", func(c *Config, v string) error {
		if v == "off" || v == "" {
			c.HTTPAddr = ""
			return nil
		}
		if err := checkHostPort(v); err != nil {
			return fmt.Errorf("%q is not host:port, such as :80, or off", v)
		}
		c.HTTPAddr = v
		return nil
	}},
	{"hsts", "365d", "under HTTPS (own TLS or a trusted proxy's https), the Strict-Transport-Security max-age browsers are told to keep to https, such as 365d or 1h; 0 for no header", func(c *Config, v string) error {
		d, err := form.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%q is not a duration such as 365d, 12h, or 0", v)
		}
		c.HSTS = time.Duration(d)
		return nil
	}},
	{"metrics-addr", "127.0.0.1:9090", "the address /metrics (Prometheus) is served on; not the public --addr, since it names every form of every site (off: nowhere)", func(c *Config, v string) error {
		if v == "off" || v == "" {
			c.MetricsAddr = ""
			return nil
		}
		if err := checkHostPort(v); err != nil {
			return fmt.Errorf("%q is not host:port, such as 127.0.0.1:9090, or off", v)
		}
		c.MetricsAddr = v
		return nil
	}},
	{"secret", "", "the installation secret that keys fingerprints and participant claims: 64 hex digits; default: made on first start (a file under --data, or kept in the PostgreSQL store); every instance of a deployment needs the same", func(c *Config, v string) error {
		c.Secret = nil
		if v == "" {
			return nil
		}
		b, err := hex.DecodeString(strings.TrimSpace(v))
		if err != nil || len(b) < 32 {
			return errors.New("want at least 32 bytes as hex digits (64 or more), such as the output of: openssl rand -hex 32")
		}
		c.Secret = b
		return nil
	}},
	{"log-level", "info", "debug, info, warn or error", func(c *Config, v string) error {
		if err := c.LogLevel.UnmarshalText([]byte(v)); err != nil {
			return fmt.Errorf("%q is not a level: use debug, info, warn or error", v)
		}
		return nil
	}},
	{"debug-addr", "", "serve Go pprof profiles on this address (keep it on loopback), for finding what limits a server", func(c *Config, v string) error {
		if v != "" {
			if err := checkHostPort(v); err != nil {
				return fmt.Errorf("%q is not host:port, such as 127.0.0.1:6060", v)
			}
		}
		c.DebugAddr = v
		return nil
	}},
	// uploads (a file field's bytes)
	{"upload-expiry", "24h", "how long an upload that no submission names is kept before its bytes are deleted", durationSetter(func(c *Config) *time.Duration { return &c.UploadExpiry }, time.Minute, 30*24*time.Hour)},
	{"upload-address-bytes", "1GiB", "bytes that the uploads no submission has claimed yet may hold per address (an IPv6 /64 is one address); 0 for no limit", sizeSetter(func(c *Config) *int64 { return &c.UploadLimits.SourceBytes })},
	{"upload-address-in-flight", "100", "uploads still being sent per address (an IPv6 /64 is one address); 0 for no limit", intSetter(func(c *Config) *int { return &c.UploadLimits.SourceInFlight }, 0, 1<<20)},
	{"upload-form-bytes", "10GiB", "bytes that the uploads no submission has claimed yet may hold per form; 0 for no limit", sizeSetter(func(c *Config) *int64 { return &c.UploadLimits.FormBytes })},
	{"upload-form-in-flight", "1000", "uploads still being sent per form; 0 for no limit", intSetter(func(c *Config) *int { return &c.UploadLimits.FormInFlight }, 0, 1<<20)},
	{"upload-reserve", "1GiB", "free space kept on the disk of --data: uploads that would leave less are refused with 507 and Retry-After, so the journal and the store never find the disk full; 0 for none", sizeSetter(func(c *Config) *int64 { return &c.UploadReserve })},
	{"clamd", "", "scan every upload with ClamAV's clamd before a submission can use it: unix:///run/clamav/clamd.ctl or tcp://host:port; empty: no scanning", func(c *Config, v string) error {
		if v != "" {
			if _, err := clamd.Parse(v); err != nil {
				return err
			}
		}
		c.Clamd = v
		return nil
	}},
	{"uploads", "data", "where complete uploads' bytes live: data (a directory under --data), or an S3-compatible bucket every instance shares, s3://BUCKET[/PREFIX]?endpoint=https://HOST:PORT[&region=R&style=path|virtual], credentials from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY", func(c *Config, v string) error {
		c.UploadsS3 = nil
		if v == "" || v == "data" {
			return nil
		}
		loc, err := s3objects.ParseURL(v)
		if err != nil {
			return err
		}
		c.UploadsS3 = &loc
		return nil
	}},
	{"link-ttl", "15m", "how long a signed link to download an entry's file (in exports and webhooks) works", durationSetter(func(c *Config) *time.Duration { return &c.LinkTTL }, time.Minute, 7*24*time.Hour)},
	{"backup-every", "0s", "back up the embedded journal, store, secret and uploaded files this often (such as 1h) into a new directory under --backup-dir; 0s for no scheduled backups", durationSetter(func(c *Config) *time.Duration { return &c.BackupEvery }, 0, 30*24*time.Hour)},
	{"backup-dir", "", "where scheduled backups go (one directory each, named by its time); best on another disk than --data", func(c *Config, v string) error {
		c.BackupDir = v
		return nil
	}},
	{"backup-keep", "48", "scheduled backups kept in --backup-dir; older ones are removed", intSetter(func(c *Config) *int { return &c.BackupKeep }, 1, 100000)},
	// Single sign-on for the console (docs/sso.md).
	{"oidc-issuer", "", "the issuer URL of the OpenID Provider the console signs people in with, such as https://id.example.org/realms/staff (discovered at start); empty: passwords only", func(c *Config, v string) error {
		if v != "" {
			u, err := url.Parse(v)
			if err != nil || u.Host == "" || (u.Scheme != "https" && !(u.Scheme == "http" && loopback(u.Hostname()))) {
				return fmt.Errorf("%q is not an https:// issuer URL such as https://id.example.org/realms/staff (http:// only on localhost)", v)
			}
		}
		c.OIDC.Issuer = v
		return nil
	}},
	{"oidc-client-id", "", "the client id formd has at the OpenID Provider", func(c *Config, v string) error {
		c.OIDC.ClientID = strings.TrimSpace(v)
		return nil
	}},
	{"oidc-client-secret", "", "the client secret formd has at the OpenID Provider (a confidential client); keep it in the environment or the config file rather than on the command line", func(c *Config, v string) error {
		c.OIDC.ClientSecret = v
		return nil
	}},
	{"oidc-name", "", "the provider's name on the console's sign-in button (Sign in with NAME); default: the issuer's host", func(c *Config, v string) error {
		c.OIDC.Name = strings.TrimSpace(v)
		return nil
	}},
	{"oidc-role-claim", "groups", "the ID token claim (a string or a list of strings) that --oidc-roles reads, such as groups or roles", func(c *Config, v string) error {
		if strings.TrimSpace(v) == "" {
			return errors.New("must name a claim of the ID token, such as groups")
		}
		c.OIDC.RoleClaim = strings.TrimSpace(v)
		return nil
	}},
	{"oidc-roles", "", "what the role claim gives, first match wins: VALUE=ROLE:SITES rules separated by ';', such as 'formd-admins=owner:*;fair-team=editor:fair,expo' (ROLE owner, editor or viewer; * for every site); a person no rule matches gets nothing", func(c *Config, v string) error {
		rules, err := sso.ParseRules(v)
		if err != nil {
			return err
		}
		c.OIDC.Rules = rules
		return nil
	}},
	{"oidc-create-accounts", "false", "true: a person whose verified e-mail has no account gets one at first sign-in, when a rule gives them a role; false: an owner adds accounts first", func(c *Config, v string) error {
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%q is not true or false", v)
		}
		c.OIDC.CreateAccounts = b
		return nil
	}},
	{"password-sign-in", "on", "on: accounts may sign in to the console with a password; off: single sign-on only, except the --break-glass-email owner", func(c *Config, v string) error {
		switch v {
		case "on", "true":
			c.PasswordSignIn = true
		case "off", "false":
			c.PasswordSignIn = false
		default:
			return fmt.Errorf("%q is not on or off", v)
		}
		return nil
	}},
	{"break-glass-email", "", "with --password-sign-in off, the e-mail of the one owner account that may still sign in with its password (when the identity provider is down)", func(c *Config, v string) error {
		if v != "" {
			if _, err := mail.ParseAddress(v); err != nil || strings.ContainsAny(v, "<> ") {
				return fmt.Errorf("%q is not an e-mail address such as owner@example.org", v)
			}
		}
		c.BreakGlass = strings.ToLower(strings.TrimSpace(v))
		return nil
	}},
	{"log-format", "json", "json or text", func(c *Config, v string) error {
		if v != "json" && v != "text" {
			return fmt.Errorf("%q is not a log format: use json or text", v)
		}
		c.LogFormat = v
		return nil
	}},
}

// StorageSettings are the settings that locate the journal and the store,
// for the commands that open them without serving.
var StorageSettings = []string{"data", "journal", "store", "postgres-max-conns", "sqlite-readers", "secret", "nats-stream", "nats-replicas", "nats-ack-wait", "nats-monitor", "log-level", "log-format"}

// Loader registers settings on a flag set and, after parsing, builds the
// Config from defaults, file, environment and flags.
type Loader struct {
	fs      *flag.FlagSet
	names   map[string]bool
	flags   map[string]string
	cfgFile *string
	getenv  func(string) string
}

// NewLoader registers the named settings (all when names is empty) and
// --config on fs. getenv reads the environment (os.Getenv).
func NewLoader(fs *flag.FlagSet, getenv func(string) string, names ...string) *Loader {
	l := &Loader{fs: fs, names: map[string]bool{}, flags: map[string]string{}, getenv: getenv}
	for _, s := range settings {
		if len(names) > 0 && !slices.Contains(names, s.name) {
			continue
		}
		l.names[s.name] = true
		name := s.name
		fs.Func(name, fmt.Sprintf("%s (env %s, default %q)", s.usage, Env(name), s.def), func(v string) error {
			l.flags[name] = v
			return nil
		})
	}
	l.cfgFile = fs.String("config", "", "YAML file of settings, keyed by flag name (env FORMD_CONFIG)")
	return l
}

// Load builds the Config. Call it after fs.Parse.
func (l *Loader) Load() (Config, error) {
	var c Config
	values := map[string]string{}
	source := map[string]string{}
	for _, s := range settings {
		if l.names[s.name] {
			values[s.name], source[s.name] = s.def, "default"
		}
	}
	path := *l.cfgFile
	if path == "" {
		path = l.getenv("FORMD_CONFIG")
	}
	if path != "" {
		file, err := readFile(path)
		if err != nil {
			return c, err
		}
		for k, v := range file {
			if !l.names[k] {
				return c, fmt.Errorf("config file %s: unknown setting %q; valid: %s", path, k, strings.Join(l.sortedNames(), ", "))
			}
			values[k], source[k] = v, "config file "+path
		}
	}
	for name := range l.names {
		if v := l.getenv(Env(name)); v != "" {
			values[name], source[name] = v, Env(name)
		}
	}
	for name, v := range l.flags {
		values[name], source[name] = v, "--"+name
	}
	for _, s := range settings {
		v, ok := values[s.name]
		if !ok {
			// Not registered for this command: keep the default.
			v = s.def
		}
		if err := s.set(&c, v); err != nil {
			where := source[s.name]
			if where == "" {
				where = "default"
			}
			return c, fmt.Errorf("setting %s (--%s, %s; from %s): %w", s.name, s.name, Env(s.name), where, err)
		}
	}
	if c.MaxWait < c.DefaultWait {
		return c, fmt.Errorf("setting max-wait (%s) is below wait (%s); raise --max-wait or lower --wait", c.MaxWait, c.DefaultWait)
	}
	if err := c.settleTLS(source); err != nil {
		return c, err
	}
	if c.BackupEvery > 0 {
		switch {
		case c.BackupEvery < time.Minute:
			return c, fmt.Errorf("setting backup-every (%s) is below 1m; back up every minute or less often, or use Litestream for continuous replication (docs/backups-and-upgrades.md)", c.BackupEvery)
		case c.BackupDir == "":
			return c, errors.New("setting backup-every needs backup-dir: name where the backups go (--backup-dir, FORMD_BACKUP_DIR), best on another disk than --data")
		case !c.JournalDriver().Backup || !c.StoreDriver().Backup:
			return c, fmt.Errorf("setting backup-every backs up the embedded sqlite journal and store only: %s (docs/backups-and-upgrades.md)", drivers.BackupAdvice(c.JournalDriver(), c.StoreDriver()))
		}
	}
	if err := c.settleOIDC(); err != nil {
		return c, err
	}
	if c.Workers == 0 {
		c.Workers = c.StoreDriver().Workers
	}
	if c.WriteTimeout == 0 {
		c.WriteTimeout = c.MaxWait + 15*time.Second
	}
	if c.PollOutcomes == 0 && !c.JournalDriver().OneInstance {
		c.PollOutcomes = 100 * time.Millisecond
	}
	return c, nil
}

// JournalDriver is the journal driver --journal names, with its traits;
// the zero Driver for a value Load would refuse.
func (c Config) JournalDriver() drivers.Driver {
	d, _ := drivers.Journal(c.Journal)
	return d
}

// StoreDriver is the store driver --store names, with its traits; the
// zero Driver for a value Load would refuse.
func (c Config) StoreDriver() drivers.Driver {
	d, _ := drivers.Store(c.Store)
	return d
}

// Given says a setting was named by a flag, its FORMD_* variable or the
// config file rather than left at its default: formd forms apply asks it
// before it writes to the default data directory. Call it after fs.Parse.
func (l *Loader) Given(name string) bool {
	if _, ok := l.flags[name]; ok {
		return true
	}
	if l.getenv(Env(name)) != "" {
		return true
	}
	path := *l.cfgFile
	if path == "" {
		path = l.getenv("FORMD_CONFIG")
	}
	if path == "" {
		return false
	}
	file, err := readFile(path)
	if err != nil {
		return false
	}
	_, ok := file[name]
	return ok
}

func (l *Loader) sortedNames() []string {
	var out []string
	for n := range l.names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

func readFile(path string) (map[string]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("config file: %w", err)
	}
	var m map[string]any
	if err := yaml.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("config file %s: not valid YAML: %w", path, err)
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out, nil
}

// Logger makes the slog logger the settings ask for.
func (c Config) Logger(w *os.File) *slog.Logger {
	opts := &slog.HandlerOptions{Level: c.LogLevel}
	if c.LogFormat == "text" {
		return slog.New(slog.NewTextHandler(w, opts))
	}
	return slog.New(slog.NewJSONHandler(w, opts))
}

func durationSetter(field func(*Config) *time.Duration, lo, hi time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil || d < lo || d > hi {
			return fmt.Errorf("%q is not a duration from %s to %s", v, shortDuration(lo), shortDuration(hi))
		}
		*field(c) = d
		return nil
	}
}

// shortDuration writes a duration as a person would type it: 1m, 720h,
// 1h30m, 500ms (not 1m0s, 720h0m0s).
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func intSetter(field func(*Config) *int, lo, hi int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < lo || n > hi {
			return fmt.Errorf("%q is not a whole number from %d to %d", v, lo, hi)
		}
		*field(c) = n
		return nil
	}
}

// sizeSetter sets a size in bytes (KiB, MiB, GiB suffixes allowed).
func sizeSetter(field func(*Config) *int64) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := parseSize(v)
		if err != nil || n < 0 {
			return fmt.Errorf("%q is not a size: write bytes such as 1048576, or 512KiB, 1GiB", v)
		}
		*field(c) = n
		return nil
	}
}

func parseSize(v string) (int64, error) {
	mult := int64(1)
	s := strings.TrimSpace(v)
	for _, suf := range []struct {
		s string
		m int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"KB", 1000}, {"MB", 1000 * 1000}, {"GB", 1000 * 1000 * 1000}, {"B", 1}} {
		if t, ok := strings.CutSuffix(s, suf.s); ok {
			s, mult = t, suf.m
			break
		}
	}
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64)
	if err != nil {
		return 0, err
	}
	return n * mult, nil
}

func parseRateLimit(v string) (form.RateLimit, error) {
	bad := fmt.Errorf("%q is not a rate limit: write N/DURATION with an optional ,burst=B (such as 120/1m,burst=60), or off", v)
	v = strings.TrimSpace(v)
	if v == "off" {
		return form.RateLimit{Off: true}, nil
	}
	main, rest, _ := strings.Cut(v, ",")
	n, per, ok := strings.Cut(main, "/")
	if !ok {
		return form.RateLimit{}, bad
	}
	req, err := strconv.Atoi(n)
	if err != nil || req <= 0 {
		return form.RateLimit{}, bad
	}
	d, err := form.ParseDuration(per)
	if err != nil || d <= 0 {
		return form.RateLimit{}, bad
	}
	rl := form.RateLimit{Requests: req, Per: d, Burst: req}
	if rest != "" {
		b, ok := strings.CutPrefix(strings.TrimSpace(rest), "burst=")
		if !ok {
			return form.RateLimit{}, bad
		}
		rl.Burst, err = strconv.Atoi(b)
		if err != nil || rl.Burst <= 0 {
			return form.RateLimit{}, bad
		}
	}
	return rl, nil
}

// checkHostPort accepts host:port as net.Listen takes it (an IPv6 host in
// brackets), with a numeric port.
func checkHostPort(v string) error {
	_, port, err := net.SplitHostPort(v)
	if err != nil {
		return err
	}
	if p, err := strconv.Atoi(port); err != nil || p < 0 || p > 65535 {
		return errors.New("bad port")
	}
	return nil
}

// Default is the configuration with every setting at its default, for
// tests and tools that build a Config in code.
func Default() Config {
	l := NewLoader(flag.NewFlagSet("default", flag.ContinueOnError), func(string) string { return "" })
	c, err := l.Load()
	if err != nil {
		panic(fmt.Sprintf("default settings do not load: %v", err)) // a bug in the settings table
	}
	return c
}

// settleOIDC checks the single sign-on settings together.
func (c Config) settleOIDC() error {
	if !c.OIDC.Enabled() {
		for _, name := range []struct {
			set  bool
			name string
		}{{c.OIDC.ClientID != "", "oidc-client-id"}, {c.OIDC.ClientSecret != "", "oidc-client-secret"}, {len(c.OIDC.Rules) > 0, "oidc-roles"}} {
			if name.set {
				return fmt.Errorf("setting %s needs oidc-issuer: name the OpenID Provider's issuer URL (--oidc-issuer, FORMD_OIDC_ISSUER)", name.name)
			}
		}
		if !c.PasswordSignIn {
			return errors.New("setting password-sign-in is off but oidc-issuer is empty: nobody could sign in; set --oidc-issuer (FORMD_OIDC_ISSUER) or turn password sign-in on")
		}
		return nil
	}
	if c.OIDC.ClientID == "" {
		return errors.New("setting oidc-issuer needs oidc-client-id: the client id formd has at the provider (--oidc-client-id, FORMD_OIDC_CLIENT_ID)")
	}
	if len(c.OIDC.Rules) == 0 {
		return fmt.Errorf("setting oidc-issuer needs oidc-roles: without rules nobody signing in gets a role; write VALUE=ROLE:SITES rules for the %s claim, such as --oidc-roles 'formd-admins=owner:*' (FORMD_OIDC_ROLES)", c.OIDC.RoleClaim)
	}
	return nil
}

// loopback says host is this machine, where an http:// issuer is allowed
// (tests, a provider on the same host).
func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.IsLoopback()
}
