// Package clamd scans bytes through a ClamAV daemon (--clamd). It is the
// uploads service's Scanner; it knows nothing of uploads.
package clamd

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
)

// Clamd scans through a ClamAV daemon's INSTREAM command, over a Unix
// socket or TCP. Each scan is one connection: clamd serves each on a
// thread of its own, and a connection broken mid-scan fails only that
// scan.
type Clamd struct {
	network, address string
	// Timeout bounds one scan, connection included, beyond ctx.
	Timeout time.Duration
}

// chunk is how many bytes go in one INSTREAM chunk; clamd's own
// clients use a few KiB, and the memory a scan takes is this.
const chunk = 64 << 10

// Parse reads --clamd: unix:///run/clamav/clamd.ctl or
// tcp://host:port.
func Parse(v string) (*Clamd, error) {
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

// ErrUnavailable is a scan that did not happen: clamd could not be
// reached, or refused the stream. The service answers it as
// scan-unavailable and keeps the upload unclaimable until a scan passes.
var ErrUnavailable = errors.New("virus scanner unavailable")

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
		return "", fmt.Errorf("%w: connect to clamd at %s: %w", ErrUnavailable, c, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.SetDeadline(time.Now()) })
	defer stop()
	if _, err := io.WriteString(conn, "zINSTREAM\x00"); err != nil {
		return "", fmt.Errorf("%w: send to clamd: %w", ErrUnavailable, err)
	}
	buf := make([]byte, 4+chunk)
	for {
		n, rerr := io.ReadFull(r, buf[4:])
		if n > 0 {
			binary.BigEndian.PutUint32(buf[:4], uint32(n))
			if _, err := conn.Write(buf[:4+n]); err != nil {
				// clamd closes the connection when the stream passes its
				// StreamMaxLength; its answer says so.
				if reply, _ := readReply(conn); reply != "" {
					return "", fmt.Errorf("%w: clamd: %s", ErrUnavailable, reply)
				}
				return "", fmt.Errorf("%w: send to clamd: %w", ErrUnavailable, err)
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
		return "", fmt.Errorf("%w: send to clamd: %w", ErrUnavailable, err)
	}
	reply, err := readReply(conn)
	if err != nil {
		return "", fmt.Errorf("%w: read clamd's answer: %w", ErrUnavailable, err)
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
	return "", fmt.Errorf("%w: clamd answered %q", ErrUnavailable, reply)
}

// New is the daemon at address over network ("unix" or "tcp"), each scan
// bounded by timeout; Parse reads the same from --clamd.
func New(network, address string, timeout time.Duration) *Clamd {
	return &Clamd{network: network, address: address, Timeout: timeout}
}
