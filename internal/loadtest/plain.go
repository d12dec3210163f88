package loadtest

import (
	"context"
	"io"
	"net/http"
	"strings"
	"time"
)

// plainProtocol drives a server that does not speak formd's protocol (the
// decode ceiling, PocketBase): one POST of the person's payload to
// Config.URL, no key, no retry, and no checker; a 2xx answer counts as a
// success.
type plainProtocol struct {
	e  *engine
	hc *http.Client
}

var _ protocol = (*plainProtocol)(nil)

func (p *plainProtocol) setUp(context.Context) error {
	p.e.transport = newTransport(p.e.cfg.Clients)
	p.hc = &http.Client{Transport: p.e.transport}
	return nil
}

// person sends the person's payload once.
func (p *plainProtocol) person(ctx context.Context, i int) {
	e := p.e
	pl := makePlan(e.cfg.Seed, i, e.cfg.Shares)
	body := pl.person.body(pl.style)
	e.inFlight.Add(1)
	defer e.inFlight.Add(-1)
	actx, cancel := context.WithTimeout(ctx, e.cfg.AttemptTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, e.cfg.URL, strings.NewReader(string(body)))
	if err != nil {
		e.fail(err)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	e.counters.posts.Add(1)
	resp, err := p.hc.Do(req)
	if err != nil {
		e.counters.netErrors.Add(1)
		if actx.Err() != nil {
			e.counters.timeouts.Add(1)
		}
		return
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err != nil {
		e.counters.netErrors.Add(1)
		return
	}
	e.countAnswer(resp.StatusCode)
	d := time.Since(start)
	e.counters.decided.Add(1)
	e.outcomeHist.record(d)
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		e.counters.acked.Add(1)
		e.ackHist.record(d)
	}
}

// report counts the answers; with no checker, OK says only that the run
// itself did not fail.
func (p *plainProtocol) report(_ context.Context, r *Report) {
	c := &p.e.counters
	r.Mode, r.Target = "plain", p.e.cfg.URL
	r.Plain = &PlainCounts{Sent: c.posts.Load(), OK: c.answers2xx.Load(), Refused: c.answers4xx.Load() + c.answers429.Load(),
		Failed: c.answers5xx.Load() + c.answers503.Load(), NoAnswer: c.netErrors.Load()}
	r.OK = len(r.Errors) == 0
}

// cleanUp has nothing to undo: a plain run changes nothing on the server
// but what it posts.
func (p *plainProtocol) cleanUp(context.Context) bool { return false }
