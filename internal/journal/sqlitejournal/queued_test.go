package sqlitejournal_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"github.com/formd/formd/internal/poll"
)

// An async append whose lookup found nothing, and during which another
// append of its key was committed and left the queue, is answered as that
// first entry, not as a new one: the writer keeps the first, so a "new"
// answer would name an entry that is never journaled.
func TestAsyncRetryDuringCommit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	j, err := sqlitejournal.Open(ctx, sqlitejournal.Options{Path: filepath.Join(t.TempDir(), "journal.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	looked, resume := make(chan struct{}), make(chan struct{})
	hold := true
	sqlitejournal.SetAfterLookup(j, func() {
		if hold { // only the retry's append, the first to get here
			hold = false
			close(looked)
			<-resume
		}
	})
	retry := journaltest.NewEntry("f", "k")
	retry.ID = "id-the-retry" // each request gets an id of its own
	got := make(chan journal.Appended, 1)
	go func() {
		a, err := j.Append(ctx, retry, false)
		if err != nil {
			t.Error(err)
		}
		got <- a
	}()
	<-looked // the retry's lookup found nothing

	first := journaltest.NewEntry("f", "k")
	if _, err := j.Append(ctx, first, false); err != nil {
		t.Fatal(err)
	}
	poll.UntilNil(t, "the first append committed and out of the queue", 10*time.Second, func() error {
		e, ok, err := j.Lookup(ctx, "f", "k")
		switch {
		case err != nil:
			return err
		case !ok || e.Seq == 0: // queued entries have no seq yet
			return errors.New("not committed yet")
		}
		return nil
	})
	close(resume)
	a := <-got
	if a.Entry.ID != first.ID {
		t.Fatalf("the retry was answered as entry %s (duplicate %v), want the journaled %s", a.Entry.ID, a.Duplicate, first.ID)
	}
}
