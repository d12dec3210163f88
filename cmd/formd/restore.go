package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/processor"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/replay"
	"github.com/formd/formd/internal/server"
	"github.com/formd/formd/internal/store"
)

func init() {
	commands["restore"] = command{"restore a backup into a new data directory, verified first, audited after", restoreCmd}
}

func restoreCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd restore", flag.ContinueOnError)
	fs.SetOutput(stderr)
	from := fs.String("from", "", "the backup directory (formd backup --to, or one under --backup-dir) (required)")
	force := fs.Bool("force", false, "replace the journal, store, secret and uploaded files of a --data directory that has them")
	resume := fs.Bool("resume", false, "finish a restore into --data that was stopped (its RESTORING marker is there): the data becomes the backup's")
	abort := fs.Bool("abort", false, "undo a restore into --data that was stopped (its RESTORING marker is there): the data is put back as it was")
	loader := config.NewLoader(fs, os.Getenv, "data", "secret", "log-level", "log-format")
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	c := cli{"formd restore", stderr}
	fail := c.failf
	cfg, code := c.settings(loader)
	if code != 0 {
		return code
	}
	if *resume && *abort {
		return fail(2, "--resume finishes a stopped restore, --abort undoes it: give one")
	}
	if *from == "" && !*resume && !*abort {
		return fail(2, "--from DIR is required: the backup to restore")
	}
	if *from != "" && (*resume || *abort) {
		return fail(2, "--resume and --abort take no --from: the stopped restore's marker in --data names its backup")
	}
	dataSet := os.Getenv(config.Env("data")) != ""
	fs.Visit(func(f *flag.Flag) { dataSet = dataSet || f.Name == "data" })
	if !dataSet {
		return fail(2, "--data NEWDIR is required: the directory to restore into (new or empty)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if *abort {
		if err := backup.Abort(backup.RestoreOptions{Data: cfg.Data, Drivers: server.BackupDrivers(), Lock: server.LockData}); err != nil {
			return fail(1, "%v", err)
		}
		fmt.Fprintf(stdout, "the stopped restore is undone: %s holds what it held before it began\n", cfg.Data)
		return 0
	}
	var (
		m      backup.Manifest
		unlock func()
		err    error
	)
	if *resume {
		m, unlock, err = backup.Resume(ctx, backup.RestoreOptions{Data: cfg.Data, Drivers: server.BackupDrivers(), Lock: server.LockData,
			Settle: settleIn(cfg, stdout)})
	} else {
		known, kerr := server.KnownSchemas(ctx)
		if kerr != nil {
			return fail(1, "%v", kerr)
		}
		m, unlock, err = backup.Restore(ctx, backup.RestoreOptions{From: *from, Data: cfg.Data, Force: *force,
			Version: release.Version(), Known: known, Drivers: server.BackupDrivers(), Lock: server.LockData,
			Settle: settleIn(cfg, stdout)})
	}
	if err != nil {
		return fail(1, "%v", err)
	}
	defer unlock()
	fmt.Fprintf(stdout, "verified and copied the backup of %s (formd %s) into %s\n", m.Started.Format("2006-01-02 15:04:05 MST"), m.Formd, cfg.Data)
	printManifest(stdout, m)
	if m.NoSecret {
		fmt.Fprintln(stdout, "the backup has no secret file: start formd with the --secret / FORMD_SECRET it was taken with")
	}
	if err := settle(ctx, cfg, m, stdout); err != nil {
		return fail(1, "the files are in place in %s, but: %v", cfg.Data, err)
	}
	fmt.Fprintf(stdout, "restored: start it with formd serve --data %s\n", cfg.Data)
	return 0
}

// settleIn is the restore's Settle: on the staged copy in dir, before
// it is moved into --data, the journal's entries beyond the store are
// decided (decideBeyond), so that a restore stopped once its files are in
// holds every entry decided; settle audits after the move.
func settleIn(cfg config.Config, stdout io.Writer) func(ctx context.Context, dir string) error {
	return func(ctx context.Context, dir string) error {
		c := cfg
		c.Data = dir
		j, st, log, err := openData(ctx, c)
		if err != nil {
			return err
		}
		defer closeDrivers(j, st)
		return decideBeyond(ctx, j, st, log, stdout)
	}
}

// openData opens restored data with today's drivers (migrating it if the
// backup is older) and its installation secret.
func openData(ctx context.Context, cfg config.Config) (journal.Journal, server.Store, *slog.Logger, error) {
	log := cfg.Logger(os.Stderr)
	j, st, err := server.AttachDrivers(ctx, cfg, log)
	if err != nil {
		return nil, nil, nil, err
	}
	if _, err := server.InstallationSecret(ctx, cfg, st); err != nil {
		closeDrivers(j, st)
		return nil, nil, nil, err
	}
	return j, st, log, nil
}

// decideBeyond decides what the journal holds beyond the store (the
// journal was copied after the store, so it may hold entries the store
// has not decided), saying how many.
func decideBeyond(ctx context.Context, j journal.Journal, st server.Store, log *slog.Logger, stdout io.Writer) error {
	before, err := replay.Audit(ctx, j, st, journal.Filter{}, nil)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	fmt.Fprintf(stdout, "journal entries: %d; decided in the store: %d; journaled after the store was copied, to decide now: %d\n",
		before.Journaled, before.Decided, before.Missing)
	if before.Missing == 0 {
		return nil
	}
	newProc := func(observe func(store.Outcome)) replay.Processor {
		return processor.New(j, st, processor.NewNotifier(), processor.Options{Logger: log, Observe: observe, MaxAttempts: 1})
	}
	r, err := replay.Run(ctx, j, st, newProc, replay.Options{})
	if err != nil {
		return fmt.Errorf("decide the journal's entries: %w", err)
	}
	for _, k := range r.Keys() {
		fmt.Fprintf(stdout, "  %-32s %d\n", k, r.Counts[k])
	}
	return nil
}

// settle opens the restored data with today's drivers (migrating it if
// the backup is older), decides what the journal holds beyond the store
// — the journal was copied after the store, so it may hold entries the
// store has not decided — and audits the result, the uploads' files too.
func settle(ctx context.Context, cfg config.Config, m backup.Manifest, stdout io.Writer) error {
	j, st, log, err := openData(ctx, cfg)
	if err != nil {
		return err
	}
	defer closeDrivers(j, st)
	if err := decideBeyond(ctx, j, st, log, stdout); err != nil {
		return err
	}
	after, err := replay.Audit(ctx, j, st, journal.Filter{}, nil)
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	fmt.Fprintf(stdout, "audit: journal entries %d, with an outcome %d, without %d, without their first event %d\n",
		after.Journaled, after.Decided, after.Missing, len(after.WithoutEvent))
	for _, k := range after.Keys() {
		fmt.Fprintf(stdout, "  %-28s %d\n", k, after.Statuses[k])
	}
	if !after.OK() {
		return fmt.Errorf("the audit of the restored data is not clean; run formd audit --data %s for the details", cfg.Data)
	}
	if m.UploadsElsewhere != "" {
		fmt.Fprintf(stdout, "the uploads' files are not in this backup: they are in %s, which this data names with --uploads\n", m.UploadsElsewhere)
		return nil
	}
	filesOK, err := auditFiles(ctx, cfg, st, stdout)
	if err != nil {
		return fmt.Errorf("audit the files: %w", err)
	}
	if !filesOK {
		why := ""
		if len(m.UploadsGone) > 0 {
			why = fmt.Sprintf(" (the backup lists %d uploads erased after its store was copied: their entries were forgotten or expired since; forget them again)", len(m.UploadsGone))
		}
		return fmt.Errorf("the file audit of the restored data is not clean%s; run formd audit --data %s for the details", why, cfg.Data)
	}
	return nil
}
