package intake

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
)

// flakyRefusals fails its first write and keeps the others.
type flakyRefusals struct {
	fails int
	got   []store.RefusalCount
}

func (f *flakyRefusals) AddRefusals(_ context.Context, c []store.RefusalCount) error {
	if f.fails > 0 {
		f.fails--
		return errors.New("store down")
	}
	f.got = append(f.got, c...)
	return nil
}

func (f *flakyRefusals) RefusalsOf(context.Context, string) (map[string]int64, error) {
	return nil, nil
}

// The tally counts only refusals at the door, and a write that fails
// keeps its counts for the next one.
func TestRefusalTallyKeepsCountsAcrossAFailedWrite(t *testing.T) {
	t.Parallel()
	st := &flakyRefusals{fails: 1}
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	tally := NewRefusalTally(st, func() time.Time { return now }, slog.New(slog.DiscardHandler))
	tally.Note("f", problem.New(problem.CodeFormClosed, ""))
	tally.Note("f", problem.New(problem.CodeFormClosed, ""))
	tally.Note("f", problem.New(problem.CodeRateLimited, "")) // not a door refusal the tiles count
	if err := tally.Flush(context.Background()); err == nil {
		t.Fatal("the failing write was not reported")
	}
	tally.Note("f", problem.New(problem.CodeFormClosed, ""))
	if err := tally.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(st.got) != 1 || st.got[0] != (store.RefusalCount{Form: "f", Reason: problem.CodeFormClosed, Hour: now.Truncate(time.Hour), N: 3}) {
		t.Fatalf("written %+v, want 3 form-closed in the hour", st.got)
	}
	var none *RefusalTally
	none.Note("f", problem.New(problem.CodeFormClosed, "")) // a nil tally counts nothing
}
