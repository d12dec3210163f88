package loadtest

import (
	"fmt"
	"io"
	"time"
)

// progress writes a live line to w every second until the returned
// function is called; that function ends the line.
func (e *engine) progress(w io.Writer) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lastAcked int64
		last := time.Now()
		for {
			select {
			case <-done:
				fmt.Fprintln(w)
				return
			case now := <-t.C:
				acked := e.counters.acked.Load()
				rate := float64(acked-lastAcked) / now.Sub(last).Seconds()
				lastAcked, last = acked, now
				c := &e.counters
				// \r and erase-line rewrite the same line on a terminal.
				fmt.Fprintf(w, "\r\033[K%6.1fs  %s acks/s  in flight %s  acked %s  decided %s  retries %s  status queries %s  errors %s  kills %d",
					now.Sub(e.started).Seconds(), commas(int64(rate)), commas(e.inFlight.Load()), commas(acked),
					commas(c.decided.Load()), commas(c.retries.Load()), commas(c.queries.Load()),
					commas(c.netErrors.Load()+c.answers5xx.Load()+c.answers503.Load()+c.answers429.Load()), e.kills.Load())
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
