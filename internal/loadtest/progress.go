package loadtest

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// plainProgressEvery is how often a progress line is written when it
// cannot be rewritten in place (not a terminal).
const plainProgressEvery = 5 * time.Second

// progress writes a progress line to w every interval until the returned
// function is called. live rewrites one line in place, as on a terminal,
// and the stop ends it; otherwise each is a line of its own, for a log or
// a pipe.
func (e *engine) progress(w io.Writer, live bool, every time.Duration) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		var lastAcked int64
		last := time.Now()
		for {
			select {
			case <-done:
				if live {
					fmt.Fprintln(w)
				}
				return
			case now := <-t.C:
				acked := e.counters.acked.Load()
				rate := float64(acked-lastAcked) / now.Sub(last).Seconds()
				lastAcked, last = acked, now
				c := &e.counters
				line := fmt.Sprintf("%6.1fs  %s acks/s  in flight %s  acked %s  decided %s  retries %s  status queries %s  errors %s  kills %d",
					now.Sub(e.started).Seconds(), commas(int64(rate)), commas(e.inFlight.Load()), commas(acked),
					commas(c.decided.Load()), commas(c.retries.Load()), commas(c.queries.Load()),
					commas(c.netErrors.Load()+c.answers5xx.Load()+c.answers503.Load()+c.answers429.Load()), e.kills.Load())
				if live {
					// \r and erase-line rewrite the same line on a terminal.
					fmt.Fprint(w, "\r\033[K"+line)
				} else {
					fmt.Fprintln(w, "loadtest "+strings.TrimLeft(line, " "))
				}
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// commas writes n with thousands separators.
func commas(n int64) string {
	s := fmt.Sprint(n)
	neg := n < 0
	if neg {
		s = s[1:]
	}
	out := make([]byte, 0, len(s)+len(s)/3)
	for i := range len(s) {
		if i > 0 && (len(s)-i)%3 == 0 {
			out = append(out, ',')
		}
		out = append(out, s[i])
	}
	if neg {
		return "-" + string(out)
	}
	return string(out)
}
