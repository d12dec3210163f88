package natsjournal

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

func (j *Journal) advisoryStream() string { return j.opts.Stream + "_MAX_DELIVERIES" }

func (j *Journal) advisorySubject() string {
	return "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + j.opts.Stream + "." + j.opts.Consumer
}

// deadLetterLoop records the entries the server gave up on, one captured
// max-deliveries advisory at a time. Every instance runs it; the work-queue
// stream hands each advisory to one of them, and the store's dead letter
// is idempotent besides.
func (j *Journal) deadLetterLoop(ctx context.Context) {
	cons, err := j.js.Consumer(ctx, j.advisoryStream(), j.opts.Consumer)
	if err != nil {
		if ctx.Err() == nil {
			j.opts.Logger.Error("dead-letter loop cannot start; entries over MaxDeliver stay visible in the advisories stream", "stream", j.advisoryStream(), "err", err)
		}
		return
	}
	for ctx.Err() == nil {
		b, err := cons.Fetch(16, jetstream.FetchMaxWait(time.Second))
		if err != nil {
			wait(ctx, time.Second)
			continue
		}
		for m := range b.Messages() {
			j.deadLetter(ctx, m)
		}
	}
}

func (j *Journal) deadLetter(ctx context.Context, m jetstream.Msg) {
	var adv struct {
		StreamSeq  uint64 `json:"stream_seq"`
		Deliveries int    `json:"deliveries"`
	}
	if err := json.Unmarshal(m.Data(), &adv); err != nil || adv.StreamSeq == 0 {
		j.opts.Logger.Error("unreadable max-deliveries advisory; dropped", "err", err)
		_ = m.Term()
		return
	}
	raw, err := j.stream.GetMsg(ctx, adv.StreamSeq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		j.opts.Logger.Error("entry over MaxDeliver is no longer in the stream", "seq", adv.StreamSeq)
		_ = m.Ack()
		return
	}
	if err != nil {
		_ = m.NakWithDelay(5 * time.Second)
		return
	}
	e, err := decode(raw.Sequence, raw.Data)
	if err != nil {
		j.opts.Logger.Error("entry over MaxDeliver is not a formd entry", "seq", adv.StreamSeq, "err", err)
		_ = m.Ack()
		return
	}
	e.Handouts = adv.Deliveries
	reason := fmt.Sprintf("delivered %d times without a decision (journal MaxDeliver)", adv.Deliveries)
	if j.opts.DeadLetter == nil {
		j.opts.Logger.Error("entry over MaxDeliver and no dead-letter recorder; replay it", "form", e.Form, "seq", e.Seq)
		_ = m.Ack()
		return
	}
	if err := j.opts.DeadLetter(ctx, e, reason, adv.Deliveries); err != nil {
		j.opts.Logger.Warn("recording a dead letter failed; will retry", "form", e.Form, "seq", e.Seq, "err", err)
		_ = m.NakWithDelay(5 * time.Second)
		return
	}
	j.opts.Logger.Error("entry dead-lettered by the journal", "form", e.Form, "seq", e.Seq, "deliveries", adv.Deliveries)
	_ = m.Ack()
}
