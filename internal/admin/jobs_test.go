package admin_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/formd/formd/internal/accounts"
	"github.com/formd/formd/internal/admin"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/poll"
)

// holdingJournal holds every Read until its context ends, as a long
// audit does.
type holdingJournal struct {
	*sqlitejournal.Journal
	reading chan struct{}
}

func (j holdingJournal) Read(ctx context.Context, _ journal.Filter, _ func(journal.Entry) error) error {
	close(j.reading)
	<-ctx.Done()
	return ctx.Err()
}

// StopJobs, the shutdown's, cancels an audit in progress and returns once
// it has stopped (the package's goleak check sees no job left), the job
// finished with the cancellation as its error.
func TestStopJobsCancelsAndWaits(t *testing.T) {
	t.Parallel()
	sj, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: filepath.Join(t.TempDir(), "journal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer sj.Close()
	j := holdingJournal{sj, make(chan struct{})}
	h := admin.New(admin.Deps{Journal: j})
	owner := accounts.Principal{Role: accounts.Owner, Sites: []string{accounts.AllSites}, Via: accounts.ViaCLI}
	job, err := h.StartAudit(owner, journal.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	poll.UntilNil(t, "the audit reading", 10*time.Second, func() error {
		select {
		case <-j.reading:
			return nil
		default:
			return context.DeadlineExceeded
		}
	})
	h.StopJobs()
	got, err := h.JobOf(owner, job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Running() || !strings.Contains(got.Err, "context canceled") {
		t.Fatalf("the audit after StopJobs: running %v, error %q; want finished, cancelled", got.Running(), got.Err)
	}
}
