package email

import (
	"context"
	"net"
	"sync"
	"time"

	"github.com/wneessen/go-mail/smtp"
)

// pooledConn is one SMTP session, set up (EHLO, STARTTLS, AUTH) and
// between transactions while idle.
type pooledConn struct {
	smtp      *smtp.Client
	raw       net.Conn    // the TCP connection, closed whatever go-mail left open
	stop      func() bool // stops closing raw when the dialling Send's ctx ends
	idleSince time.Time
}

// close ends the session: QUIT, bounded by a second, then the connection.
func (pc *pooledConn) close() {
	if pc.raw == nil {
		return
	}
	_ = pc.raw.SetDeadline(time.Now().Add(time.Second))
	if pc.smtp != nil && pc.smtp.HasConnection() {
		_ = pc.smtp.Quit()
	}
	_ = pc.raw.Close()
}

// pool holds a Mailer's connections: slots bound how many are open at
// once (in use or idle), idle ones wait newest first, and a timer closes
// those idle longer than idleTimeout.
type pool struct {
	slots       chan struct{}
	idleTimeout time.Duration

	mu     sync.Mutex
	free   []*pooledConn // oldest first
	timer  *time.Timer   // set while free is not empty
	closed bool
}

func newPool(maxConns int, idleTimeout time.Duration) *pool {
	return &pool{slots: make(chan struct{}, maxConns), idleTimeout: idleTimeout}
}

// acquire takes a slot, waiting for one bounded by ctx. The holder may
// use an idle connection or open one, and gives the slot back with
// release.
func (p *pool) acquire(ctx context.Context) error {
	select {
	case p.slots <- struct{}{}:
		return nil
	default:
	}
	select {
	case p.slots <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *pool) release() { <-p.slots }

// idle hands over the newest idle connection not yet expired, or nil.
// Idle connections count against the slots only through their holder: a
// connection is idle only between a put and the next idle, so at most
// len(slots) are open.
func (p *pool) idle() *pooledConn {
	now := time.Now()
	var expired []*pooledConn
	defer func() {
		for _, pc := range expired {
			pc.close()
		}
	}()
	p.mu.Lock()
	defer p.mu.Unlock()
	for len(p.free) > 0 {
		pc := p.free[len(p.free)-1]
		p.free = p.free[:len(p.free)-1]
		if now.Sub(pc.idleSince) < p.idleTimeout {
			return pc
		}
		expired = append(expired, pc)
	}
	return nil
}

// put keeps pc for the next Send.
func (p *pool) put(pc *pooledConn) {
	pc.idleSince = time.Now()
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		pc.close()
		return
	}
	p.free = append(p.free, pc)
	if p.timer == nil {
		p.timer = time.AfterFunc(p.idleTimeout, p.reap)
	}
	p.mu.Unlock()
}

// reap closes the connections idle for idleTimeout, and sets the timer
// again for the oldest one left.
func (p *pool) reap() {
	now := time.Now()
	p.mu.Lock()
	n := 0
	for n < len(p.free) && now.Sub(p.free[n].idleSince) >= p.idleTimeout {
		n++
	}
	expired := append([]*pooledConn(nil), p.free[:n]...)
	p.free = append(p.free[:0], p.free[n:]...)
	p.timer = nil
	if len(p.free) > 0 && !p.closed {
		p.timer = time.AfterFunc(p.idleTimeout-now.Sub(p.free[0].idleSince), p.reap)
	}
	p.mu.Unlock()
	for _, pc := range expired {
		pc.close()
	}
}

// close closes the idle connections, and those put back from now on.
func (p *pool) close() {
	p.mu.Lock()
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	free := p.free
	p.free = nil
	p.mu.Unlock()
	for _, pc := range free {
		pc.close()
	}
}
