package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/processor"
	"github.com/google/uuid"
)

// studyRebuild measures what a restart of the prototype costs: the state
// rebuilt (a) from the journal alone and (b) from a snapshot plus the
// journal's records after it. The journal is filled first, when it holds
// fewer than n records, through the prototype's own path (decided in
// memory, appended with group commit) without HTTP.
func studyRebuild(ctx context.Context, dir, formsPath string, n, tail int, capacity int64) error {
	if tail < 0 || tail > n {
		return fmt.Errorf("-tail %d: give a number of records from 0 to -n (%d)", tail, n)
	}
	forms, err := loadForms(formsPath)
	if err != nil {
		return err
	}
	f := forms.Get("bench")
	if f == nil {
		return fmt.Errorf("%s has no form bench", formsPath)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	j, err := openJournal(ctx, dir, log)
	if err != nil {
		return err
	}
	defer j.Close()
	st, err := j.Stats(ctx)
	if err != nil {
		return err
	}
	if have := int(st.LastSeq); have < n {
		s, _, err := recoverState(ctx, j, "", capacity)
		if err != nil {
			return err
		}
		d := &deciding{j: j, s: s, waits: processor.NewNotifier(), log: log}
		t := time.Now()
		if err := fill(ctx, d, dir, f, have, n); err != nil {
			return err
		}
		el := time.Since(t)
		fmt.Printf("filled the journal from %d to %d records in %s (%.0f records/s, decided in memory, group commit, no HTTP)\n",
			have, n, el.Round(time.Millisecond), float64(n-have)/el.Seconds())
	}
	fi, err := os.Stat(filepath.Join(dir, "journal.db"))
	if err != nil {
		return err
	}
	fmt.Printf("journal: %d records, %d MiB\n", n, fi.Size()>>20)

	// (a) the journal alone, through journal.Read and by a narrow scan.
	before := heap()
	var full *state
	var rec recovery
	readWall, readCPU := measure(func() { full, rec, err = recoverState(ctx, j, "", capacity) })
	if err != nil {
		return err
	}
	held := heap() - before
	keys, claims, taken := len(full.keys), len(full.claims), full.taken
	runtime.KeepAlive(full)
	full = nil
	path := filepath.Join(dir, "journal.db")
	scanned := newState(capacity, n)
	scanWall, scanCPU := measure(func() { _, err = scanJournal(ctx, path, scanned, 0) })
	if err != nil {
		return err
	}
	if err := same(scanned, keys, claims, taken); err != nil {
		return fmt.Errorf("the scan: %w", err)
	}
	scanned = nil

	// (b) a snapshot at n − tail, then the tail.
	at := uint64(n - tail)
	part := newState(capacity, int(at))
	errStop := errors.New("stop")
	err = j.Read(ctx, journal.Filter{}, func(e journal.Entry) error {
		if e.Seq > at {
			return errStop
		}
		return part.apply(e)
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	snap := filepath.Join(dir, "state.snap")
	var size int64
	writeWall, writeCPU := measure(func() { size, err = writeSnapshot(part, snap) })
	if err != nil {
		return err
	}
	part = nil
	runtime.GC()
	var fromSnap *state
	loadWall, loadCPU := measure(func() { fromSnap, err = readSnapshot(snap, capacity) })
	if err != nil {
		return err
	}
	var tailN int64
	tailWall, tailCPU := measure(func() { tailN, err = scanJournal(ctx, path, fromSnap, fromSnap.last) })
	if err != nil {
		return err
	}
	if err := same(fromSnap, keys, claims, taken); err != nil {
		return fmt.Errorf("the snapshot and its tail: %w", err)
	}
	fmt.Printf("state: %d keys, %d claims, %d places taken; %d MiB of heap\n\n", keys, claims, taken, held>>20)
	fmt.Printf("| rebuild of %d records | wall | CPU |\n|---|---:|---:|\n", n)
	row := func(what string, wall, cpu time.Duration) {
		fmt.Printf("| %s | %.2f s | %.2f s |\n", what, wall.Seconds(), cpu.Seconds())
	}
	row(fmt.Sprintf("(a) the journal alone, through journal.Read (%d records)", rec.tail), readWall, readCPU)
	row("(a′) the journal alone, a narrow scan (key, claims, fingerprint, decision)", scanWall, scanCPU)
	row(fmt.Sprintf("(b) snapshot at %d (%d MiB) read", at, size>>20), loadWall, loadCPU)
	row(fmt.Sprintf("    + its tail of %d records, narrow scan", tailN), tailWall, tailCPU)
	row("    = (b) in all", loadWall+tailWall, loadCPU+tailCPU)
	row("writing that snapshot (fsync'd, renamed)", writeWall, writeCPU)
	return nil
}

// same checks a rebuilt state against the counts of the first rebuild.
func same(s *state, keys, claims int, taken int64) error {
	if len(s.keys) != keys || len(s.claims) != claims || s.taken != taken {
		return fmt.Errorf("%d keys, %d claims, %d taken, not the journal's %d, %d, %d", len(s.keys), len(s.claims), s.taken, keys, claims, taken)
	}
	return nil
}

// measure runs fn and says how long it took and how much CPU the
// process used meanwhile.
func measure(fn func()) (wall, cpu time.Duration) {
	c, t := cpuTime(), time.Now()
	fn()
	return time.Since(t), cpuTime() - c
}

// fill appends records have..n−1 through the prototype's path, from 512
// concurrent submitters (so that commits group as under load).
func fill(ctx context.Context, d *deciding, dir string, bf *form.Form, have, n int) error {
	hasher, err := loadHasher(dir)
	if err != nil {
		return err
	}
	var next atomic.Int64
	next.Store(int64(have))
	var wg sync.WaitGroup
	var first error
	var once sync.Once
	for range 512 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) || ctx.Err() != nil {
					return
				}
				values := map[string]any{
					"name":    fmt.Sprintf("Person %d", i),
					"phone":   fmt.Sprintf("+86 139 %04d %04d", i/10000%10000, i%10000),
					"tickets": json.Number("1"),
				}
				acc, err := bf.Validate(values, hasher)
				if err != nil {
					once.Do(func() { first = err })
					return
				}
				e := journal.Entry{ID: uuid.Must(uuid.NewV7()).String(), Site: bf.Def.Site, Form: bf.ID(), Key: fmt.Sprintf("gen-%d", i),
					Fingerprint: acc.Fingerprint, Digest: hasher.Digest(bf.ID(), values), ReceivedAt: time.Now(), Claims: acc.Claims, Data: acc.Data}
				if _, err := d.Append(ctx, e, true); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return fmt.Errorf("fill the journal: %w", first)
	}
	return ctx.Err()
}

func heap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
