package loadtest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Faults are the network faults the proxy injects. Shares are per
// request, in [0, 1].
type Faults struct {
	// DropRequests: the request never reaches the server.
	DropRequests float64 `json:"drop_requests"`
	// DropResponses: the server gets the request and answers, and the
	// answer never reaches the client. This is the fault that tests
	// idempotency: the client must not make a second entry when it tries
	// again.
	DropResponses float64 `json:"drop_responses"`
	// Resets: the connection is reset (TCP RST), at random before the
	// request is forwarded or in the middle of the answer.
	Resets float64 `json:"resets"`
	// Hang is the share of dropped requests and answers that are held
	// (the connection stays open, silent) until the client gives up,
	// rather than closed at once: the client's timeout path.
	Hang float64 `json:"hang"`
	// Latency, plus a uniform random Jitter, is added before each request
	// is forwarded.
	Latency time.Duration `json:"latency_ns"`
	Jitter  time.Duration `json:"jitter_ns"`
}

// Any reports whether any fault is set.
func (f Faults) Any() bool {
	return f.DropRequests > 0 || f.DropResponses > 0 || f.Resets > 0 || f.Latency > 0 || f.Jitter > 0
}

func (f Faults) check() error {
	for _, s := range []struct {
		name string
		v    float64
	}{{"drop-requests", f.DropRequests}, {"drop-responses", f.DropResponses}, {"resets", f.Resets}, {"hang", f.Hang}} {
		if s.v < 0 || s.v > 1 {
			return fmt.Errorf("--%s %g: want a share from 0 to 1", s.name, s.v)
		}
	}
	if f.Latency < 0 || f.Jitter < 0 || f.Latency > time.Minute || f.Jitter > time.Minute {
		return errors.New("--latency and --jitter: want 0 to 1m")
	}
	return nil
}

// ProxyStats counts what the proxy did.
type ProxyStats struct {
	Connections      int64 `json:"connections"`
	Requests         int64 `json:"requests"`
	Forwarded        int64 `json:"forwarded"`
	DroppedRequests  int64 `json:"dropped_requests"`
	DroppedResponses int64 `json:"dropped_responses"`
	Resets           int64 `json:"resets"`
	Hung             int64 `json:"hung"`
	UpstreamErrors   int64 `json:"upstream_errors"`
}

// Proxy is a loopback HTTP/1.1 proxy that injects Faults between the
// virtual clients and the server. It reads each request and answer whole,
// so it can drop one request of a kept-alive connection precisely; it is
// not a general proxy (no upgrades, no 100-continue).
type Proxy struct {
	ln       net.Listener
	upstream string
	faults   Faults
	// maxHold bounds how long a hung connection is held.
	maxHold time.Duration

	done  chan struct{}
	wg    sync.WaitGroup
	mu    sync.Mutex
	conns map[net.Conn]struct{}

	connections, requests, forwarded, droppedReq, droppedResp, resets, hung, upstreamErr atomic.Int64
}

// StartProxy listens on a free loopback port and forwards to upstream
// (host:port, a loopback address).
func StartProxy(upstream string, f Faults) (*Proxy, error) {
	if err := f.check(); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fault proxy: listen: %w", err)
	}
	p := &Proxy{ln: ln, upstream: upstream, faults: f, maxHold: 2 * time.Minute,
		done: make(chan struct{}), conns: map[net.Conn]struct{}{}}
	p.wg.Go(p.accept)
	return p, nil
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Stats is a snapshot of the counters.
func (p *Proxy) Stats() ProxyStats {
	return ProxyStats{
		Connections: p.connections.Load(), Requests: p.requests.Load(), Forwarded: p.forwarded.Load(),
		DroppedRequests: p.droppedReq.Load(), DroppedResponses: p.droppedResp.Load(),
		Resets: p.resets.Load(), Hung: p.hung.Load(), UpstreamErrors: p.upstreamErr.Load(),
	}
}

// Close stops accepting, cuts every connection and waits for the proxy's
// goroutines.
func (p *Proxy) Close() error {
	close(p.done)
	err := p.ln.Close()
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return err
}

func (p *Proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
		return false
	default:
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	c.Close()
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			select {
			case <-p.done:
				return
			default:
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// Out of file descriptors, say: back off briefly rather than
			// spin, and keep serving the connections already open.
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			continue
		}
		if !p.track(c) {
			c.Close()
			return
		}
		p.connections.Add(1)
		p.wg.Go(func() {
			defer p.untrack(c)
			p.serve(c)
		})
	}
}

// serve relays one client connection's requests, one at a time, over one
// upstream connection, spoiling those the dice pick.
func (p *Proxy) serve(client net.Conn) {
	br := bufio.NewReader(client)
	var up net.Conn
	var upr *bufio.Reader
	defer func() {
		if up != nil {
			p.untrack(up)
		}
	}()
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		p.requests.Add(1)
		// Read the body now, so a dropped request is dropped whole.
		body, err := io.ReadAll(io.LimitReader(req.Body, 16<<20))
		req.Body.Close()
		if err != nil {
			return
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.TransferEncoding = nil

		f := p.faults
		// A reset picks, by a coin, whether it comes before the server
		// or in the middle of the answer.
		dropRequest := chance(f.DropRequests)
		resetHere := !dropRequest && chance(f.Resets)
		resetEarly := resetHere && rand.IntN(2) == 0
		switch {
		case dropRequest:
			p.droppedReq.Add(1)
			p.drop(client)
			return
		case resetEarly:
			p.resets.Add(1)
			reset(client)
			return
		}
		if d := f.Latency + jitter(f.Jitter); d > 0 && !p.pause(d) {
			return
		}
		if up == nil {
			up, err = net.DialTimeout("tcp", p.upstream, 5*time.Second)
			if err != nil {
				// The server is down (killed, restarting): the client
				// sees its connection reset, as it would in the field.
				p.upstreamErr.Add(1)
				reset(client)
				return
			}
			if !p.track(up) {
				up.Close()
				up = nil
				return
			}
			upr = bufio.NewReader(up)
		}
		if err := req.Write(up); err != nil {
			p.upstreamErr.Add(1)
			reset(client)
			return
		}
		p.forwarded.Add(1)
		resp, err := http.ReadResponse(upr, req)
		if err != nil {
			p.upstreamErr.Add(1)
			reset(client)
			return
		}
		rbody, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		resp.Body.Close()
		if err != nil {
			p.upstreamErr.Add(1)
			reset(client)
			return
		}
		switch {
		case resetHere:
			// Half an answer, then a reset: the client read something
			// and still has no answer.
			p.resets.Add(1)
			var head bytes.Buffer
			resp.Body = io.NopCloser(bytes.NewReader(rbody))
			resp.Write(&head)                         //nolint:errcheck // into memory
			client.Write(head.Bytes()[:head.Len()/2]) //nolint:errcheck // about to be reset anyway
			reset(client)
			return
		case chance(f.DropResponses):
			p.droppedResp.Add(1)
			p.drop(client)
			return
		}
		resp.Body = io.NopCloser(bytes.NewReader(rbody))
		resp.ContentLength = int64(len(rbody))
		resp.TransferEncoding = nil
		if err := resp.Write(client); err != nil {
			return
		}
		if resp.Close || req.Close {
			return
		}
	}
}

// drop loses a request or an answer: most often the connection just
// closes; a Hang share of the time it stays open and silent until the
// client gives up.
func (p *Proxy) drop(client net.Conn) {
	if !chance(p.faults.Hang) {
		return // serve's caller closes the connection
	}
	p.hung.Add(1)
	client.SetReadDeadline(time.Now().Add(p.maxHold)) //nolint:errcheck // best effort bound
	// Returns when the client closes its end, at the deadline, or when
	// Close cuts the connection.
	io.Copy(io.Discard, client) //nolint:errcheck // nothing to do with what it sends
}

// pause waits d unless the proxy closes first.
func (p *Proxy) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-p.done:
		return false
	}
}

func chance(share float64) bool { return share > 0 && rand.Float64() < share }

func jitter(d time.Duration) time.Duration {
	if d <= 0 {
		return 0
	}
	return rand.N(d)
}

// reset closes a TCP connection with RST rather than FIN.
func reset(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetLinger(0) //nolint:errcheck // falls back to a plain close
	}
	c.Close()
}
