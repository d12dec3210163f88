package sqlitejournal_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/journal/journaltest"
	"github.com/formd/formd/internal/journal/sqlitejournal"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func opener(t *testing.T) func() journal.Journal {
	path := filepath.Join(t.TempDir(), "journal.db")
	return func() journal.Journal {
		j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{Path: path})
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		return j
	}
}

func TestConformance(t *testing.T) {
	journaltest.Run(t, opener)
}

// The queue in front of the writer is bounded: when it is full, Append
// refuses at once instead of letting memory grow.
func TestFullQueueRefuses(t *testing.T) {
	t.Parallel()
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{
		Path: filepath.Join(t.TempDir(), "journal.db"), QueueSize: 1, MaxBatch: 1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var overloaded int
	for i := range 2000 {
		_, err := j.Append(context.Background(), journaltest.NewEntry("f", string(rune('a'+i%26))+string(rune(i))), false)
		if errors.Is(err, journal.ErrOverloaded) {
			overloaded++
		} else if err != nil {
			t.Fatal(err)
		}
	}
	if overloaded == 0 {
		t.Fatal("2000 async appends into a queue of 1 were all taken; the queue is not bounded")
	}
}

// Entries beyond MaxReady are read back from the file, in order.
func TestSpillReadsBack(t *testing.T) {
	t.Parallel()
	j, err := sqlitejournal.Open(context.Background(), sqlitejournal.Options{
		Path: filepath.Join(t.TempDir(), "journal.db"), MaxReady: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	ctx := context.Background()
	for i := range 20 {
		if _, err := j.Append(ctx, journaltest.NewEntry("f", string(rune('a'+i))), true); err != nil {
			t.Fatal(err)
		}
	}
	var last uint64
	for n := 0; n < 20; {
		got, err := j.Fetch(ctx, 7)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range got {
			if e.Seq != last+1 {
				t.Fatalf("delivered %d after %d", e.Seq, last)
			}
			last = e.Seq
			n++
		}
	}
}
