package email

import (
	"fmt"
	"log/slog"
	"net"
	"net/mail"
	"net/url"
	"strconv"
	"strings"
)

// Default ports: submission with STARTTLS (RFC 6409) and submission over
// implicit TLS (RFC 8314), the two that mail providers document.
const (
	DefaultPort    = 587
	DefaultTLSPort = 465
)

// The examples every --smtp and --smtp-from error ends with, so that the
// operator sees a valid value next to the invalid one.
const (
	urlExample  = "for example smtp://user:password@mail.example.org:587 (STARTTLS when the server offers it) or smtps://user:password@mail.example.org:465 (TLS from the first byte)"
	fromExample = `for example formd@example.org or "Spring fair <formd@example.org>"`
)

// Config is the SMTP server formd hands its mail to, as --smtp
// (FORMD_SMTP) describes it. Build it with ParseURL, which checks it once
// at start-up. Print it with Redacted (String does the same), never field
// by field: Password is a secret.
type Config struct {
	// Host is the server's name or IP address; it is also the name the
	// server's TLS certificate must carry.
	Host string
	// Port is the TCP port: 587 by default for smtp://, 465 for smtps://.
	Port int
	// ImplicitTLS is true for smtps://: TLS from the first byte. With
	// smtp:// the connection upgrades with STARTTLS when the server offers
	// it; a password is still only sent over TLS (or to a loopback server).
	ImplicitTLS bool
	// Username and Password authenticate with SMTP AUTH; both empty means
	// no authentication.
	Username string
	Password string
}

// ParseURL reads --smtp (FORMD_SMTP):
// smtp://[user[:password]@]host[:port] or smtps://…, with the user name and
// password percent-encoded (@ as %40, : as %3A). Its errors wrap
// ErrInvalidSetting, name the setting, say what is wrong and show a valid
// example; they never repeat the password.
func ParseURL(raw string) (Config, error) {
	raw = strings.TrimSpace(raw)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w --smtp (FORMD_SMTP): %s; %s", ErrInvalidSetting, fmt.Sprintf(format, args...), urlExample)
	}
	if raw == "" {
		return Config{}, bad("is empty")
	}
	shown := redactRaw(raw)
	if !strings.Contains(raw, "://") {
		return Config{}, bad("%q has no scheme: it must start with smtp:// or smtps://", shown)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's own message quotes the whole URL, password included.
		// With user information, a / ? or # in it is the likely cause,
		// and url.Parse then misreads the port.
		if strings.Contains(err.Error(), "invalid port") && !strings.Contains(raw, "@") {
			return Config{}, bad("%q has a port that is not a number from 1 to 65535", shown)
		}
		return Config{}, bad("%q is not a URL (in the user name or password write @ as %%40, : as %%3A, / as %%2F)", shown)
	}
	var c Config
	switch u.Scheme {
	case "smtp":
		c.Port = DefaultPort
	case "smtps":
		c.Port, c.ImplicitTLS = DefaultTLSPort, true
	default:
		return Config{}, bad("%q has the scheme %q: it must be smtp or smtps", shown, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" || u.Hostname() == "" {
		return Config{}, bad("%q names no host", shown)
	}
	c.Host = u.Hostname()
	if p := u.Port(); p != "" || strings.HasSuffix(u.Host, ":") {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return Config{}, bad("%q has the port %q: it must be a number from 1 to 65535", shown, p)
		}
		c.Port = n
	}
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" || u.Fragment != "" {
		return Config{}, bad("%q has a path, query or fragment: an SMTP URL ends after host:port", shown)
	}
	if u.User != nil {
		c.Username = u.User.Username()
		pass, hasPass := u.User.Password()
		c.Password = pass
		switch {
		case c.Username == "" && hasPass:
			return Config{}, bad("%q has a password but no user name", shown)
		case c.Username != "" && pass == "":
			return Config{}, bad("%q has a user name but no password", shown)
		}
	}
	return c, nil
}

// redactRaw hides the password of a URL that may not even parse, so that
// an error about it can quote it: everything between the first ':' of the
// user information and its last '@' becomes xxxxx.
func redactRaw(raw string) string {
	scheme, rest, hasScheme := strings.Cut(raw, "://")
	if !hasScheme {
		scheme, rest = "", raw
	}
	at := strings.LastIndex(rest, "@")
	if at < 0 {
		return raw
	}
	user, _, hasPass := strings.Cut(rest[:at], ":")
	if !hasPass {
		return raw
	}
	out := user + ":xxxxx" + rest[at:]
	if hasScheme {
		out = scheme + "://" + out
	}
	return out
}

// Redacted is the configuration as a URL with the password replaced by
// xxxxx, for logs and start-up messages.
func (c Config) Redacted() string {
	scheme := "smtp"
	if c.ImplicitTLS {
		scheme = "smtps"
	}
	u := url.URL{Scheme: scheme, Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	if c.Username != "" {
		u.User = url.UserPassword(c.Username, "xxxxx")
	}
	return u.String()
}

// String is Redacted, so that printing a Config with %v cannot leak the
// password.
func (c Config) String() string { return c.Redacted() }

// GoString is Redacted too, for %#v.
func (c Config) GoString() string { return c.Redacted() }

// LogValue is Redacted, so that slog.Any("smtp", cfg) cannot leak the
// password either.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.Redacted()) }

// ParseFrom reads --smtp-from (FORMD_SMTP_FROM): the sender of every mail,
// an address with an optional display name, such as
// "Spring fair <formd@example.org>". Its errors wrap ErrInvalidSetting and
// show a valid example.
func ParseFrom(s string) (mail.Address, error) {
	s = strings.TrimSpace(s)
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w --smtp-from (FORMD_SMTP_FROM): %s; %s", ErrInvalidSetting, fmt.Sprintf(format, args...), fromExample)
	}
	if s == "" {
		return mail.Address{}, bad("is empty: e-mail needs a sender address")
	}
	a, err := mail.ParseAddress(s)
	if err != nil {
		return mail.Address{}, bad("%q is not one e-mail address", s)
	}
	return *a, nil
}
