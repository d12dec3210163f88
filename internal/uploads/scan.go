package uploads

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strings"
	"time"

	"github.com/formd/formd/internal/problem"
)

// Scanner looks for malware in an upload's bytes before the upload can
// be claimed (--clamd). Scan reads r to its end and says what it found:
// "" for nothing, else the name of what it found. An error means the
// bytes were not scanned (the scanner is down or refused them): the
// upload then waits, it is never claimed unscanned.
type Scanner interface {
	Scan(ctx context.Context, r io.Reader) (found string, err error)
}

// Clamd scans through a ClamAV daemon's INSTREAM command, over a Unix
// socket or TCP. Each scan is one connection: clamd serves each on a
// thread of its own, and a connection broken mid-scan fails only that
// scan.
type Clamd struct {
	network, address string
	// Timeout bounds one scan, connection included, beyond ctx.
	Timeout time.Duration
}

// clamdChunk is how many bytes go in one INSTREAM chunk; clamd's own
// clients use a few KiB, and the memory a scan takes is this.
const clamdChunk = 64 << 10

// ParseClamd reads --clamd: unix:///run/clamav/clamd.ctl or
// tcp://host:port.
func ParseClamd(v string) (*Clamd, error) {
	u, err := url.Parse(v)
	if err != nil {
		return nil, fmt.Errorf("%q is not unix:///path/to/clamd.ctl or tcp://host:port", v)
	}
	switch u.Scheme {
	case "unix":
		p := u.Path
		if p == "" {
			p = u.Opaque
		}
		if p == "" || u.Host != "" {
			return nil, fmt.Errorf("%q names no socket: write unix:///run/clamav/clamd.ctl (three slashes)", v)
		}
		return &Clamd{network: "unix", address: p, Timeout: 2 * time.Minute}, nil
	case "tcp":
		if _, port, err := net.SplitHostPort(u.Host); err != nil || port == "" || (u.Path != "" && u.Path != "/") {
			return nil, fmt.Errorf("%q is not tcp://host:port, such as tcp://127.0.0.1:3310", v)
		}
		return &Clamd{network: "tcp", address: u.Host, Timeout: 2 * time.Minute}, nil
	}
	return nil, fmt.Errorf("%q is not unix:///path/to/clamd.ctl or tcp://host:port", v)
}

// String is the daemon's address as --clamd names it.
func (c *Clamd) String() string { return c.network + "://" + c.address }

// errScanUnavailable is a scan that did not happen.
var errScanUnavailable = errors.New("virus scanner unavailable")

// Scan streams r to clamd and reads its verdict ("stream: OK", or
// "stream: <name> FOUND").
func (c *Clamd) Scan(ctx context.Context, r io.Reader) (string, error) {
	if c.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.Timeout)
		defer cancel()
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, c.network, c.address)
	if err != nil {
		return "", fmt.Errorf("%w: connect to clamd at %s: %w", errScanUnavailable, c, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(conn, "zINSTREAM\x00"); err != nil {
		return "", fmt.Errorf("%w: send to clamd: %w", errScanUnavailable, err)
	}
	buf := make([]byte, 4+clamdChunk)
	for {
		n, rerr := io.ReadFull(r, buf[4:])
		if n > 0 {
			binary.BigEndian.PutUint32(buf[:4], uint32(n))
			if _, err := conn.Write(buf[:4+n]); err != nil {
				// clamd closes the connection when the stream passes its
				// StreamMaxLength; its answer says so.
				if reply, _ := readReply(conn); reply != "" {
					return "", fmt.Errorf("%w: clamd: %s", errScanUnavailable, reply)
				}
				return "", fmt.Errorf("%w: send to clamd: %w", errScanUnavailable, err)
			}
		}
		if errors.Is(rerr, io.EOF) || errors.Is(rerr, io.ErrUnexpectedEOF) {
			break
		}
		if rerr != nil {
			return "", fmt.Errorf("read the bytes to scan: %w", rerr)
		}
	}
	if _, err := conn.Write([]byte{0, 0, 0, 0}); err != nil {
		return "", fmt.Errorf("%w: send to clamd: %w", errScanUnavailable, err)
	}
	reply, err := readReply(conn)
	if err != nil {
		return "", fmt.Errorf("%w: read clamd's answer: %w", errScanUnavailable, err)
	}
	return verdict(reply)
}

// readReply reads clamd's answer, NUL-terminated under the z prefix.
func readReply(conn net.Conn) (string, error) {
	b, err := io.ReadAll(io.LimitReader(conn, 4096))
	if err != nil && len(b) == 0 {
		return "", err
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return strings.TrimSpace(string(b)), nil
}

// verdict reads "stream: OK", "stream: Name FOUND" or "… ERROR".
func verdict(reply string) (string, error) {
	rest, ok := strings.CutPrefix(reply, "stream: ")
	switch {
	case ok && rest == "OK":
		return "", nil
	case ok && strings.HasSuffix(rest, " FOUND"):
		return strings.TrimSuffix(rest, " FOUND"), nil
	}
	return "", fmt.Errorf("%w: clamd answered %q", errScanUnavailable, reply)
}

// infection is an upload in which the scanner found something.
type infection struct{ field, found string }

func (i *infection) Error() string { return "file infected: field " + i.field + ": " + i.found }

func (i *infection) problem() *problem.Problem {
	return problem.New(problem.CodeFileInfected, fmt.Sprintf("the virus scanner found %s in the file for field %s; it was deleted", i.found, i.field))
}

// scanProblem is the answer while the scanner is down: the upload's
// bytes stay, and it can be claimed once a scan passes.
func scanProblem() *problem.Problem {
	return problem.New(problem.CodeScanUnavailable, "the file could not be scanned for viruses yet; it is kept: send the submission again after Retry-After seconds")
}

// scan passes an upload's bytes (read from r to its end) through the
// scanner, if there is one: nil when they are clean, *infection when
// not, and a scanProblem when the scan did not happen.
func (s *Service) scan(ctx context.Context, field string, r io.Reader) error {
	if s.cfg.Scanner == nil {
		return nil
	}
	found, err := s.cfg.Scanner.Scan(ctx, r)
	if err != nil {
		s.cfg.Logger.Warn("scan upload", "err", err)
		return fmt.Errorf("scan upload: %w", scanProblem())
	}
	if found != "" {
		return &infection{field: field, found: found}
	}
	return nil
}
