package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"maps"
	"os"
	"os/signal"
	"slices"
	"syscall"
	"time"

	"github.com/formd/formd/internal/backup"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/release"
	"github.com/formd/formd/internal/server"
)

func init() {
	commands["backup"] = command{"copy the embedded journal, store, secret and uploads' files while the server runs (backup verify DIR checks one)", backupCmd}
}

func backupCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "verify" {
		return verifyCmd(args[1:], stdout, stderr)
	}
	fs := flag.NewFlagSet("formd backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	to := fs.String("to", "", "the backup directory: new, or empty (required)")
	loader := config.NewLoader(fs, os.Getenv, append(slices.Clone(config.StorageSettings), "uploads")...)
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	c := cli{"formd backup", stderr}
	fail := c.failf
	cfg, code := c.settings(loader)
	if code != 0 {
		return code
	}
	if *to == "" {
		return fail(2, "--to DIR is required: the directory to write the backup to (new or empty), best on another disk than --data")
	}
	if !cfg.JournalDriver().Backup || !cfg.StoreDriver().Backup {
		return fail(2, "formd backup copies the embedded sqlite journal and store; back up a postgres store with pg_dump or PITR, "+
			"and a nats journal with 'nats stream backup' (docs/backups-and-upgrades.md)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	m, err := backup.Take(ctx, backup.Options{Data: cfg.Data, To: *to, Drivers: server.BackupDrivers(), Version: release.Version(), Commit: release.Commit(), Progress: func(f backup.File) {
		fmt.Fprintf(stdout, "copied %-12s %12d bytes  sha256 %s\n", f.Name, f.Size, f.SHA256)
	}, UploadsElsewhere: server.UploadsElsewhere(cfg)})
	if err != nil {
		return fail(1, "%v", err)
	}
	printManifest(stdout, m)
	for _, id := range m.UploadsGone {
		fmt.Fprintf(stdout, "upload %s: its bytes were erased (forget, retention or expiry) after the store was copied; not in the backup\n", id)
	}
	for _, id := range m.UploadsDamaged {
		fmt.Fprintf(stdout, "upload %s: its bytes in --data no longer have their SHA-256 (run formd audit); not in the backup\n", id)
	}
	if m.NoSecret {
		fmt.Fprintln(stdout, "the installation secret is not in --data (it is given with --secret / FORMD_SECRET): keep it with this backup yourself; a restore needs it")
	}
	fmt.Fprintf(stdout, "backup written to %s in %s; check it any time with: formd backup verify %s\n", *to, m.Finished.Sub(m.Started).Round(time.Millisecond), *to)
	return 0
}

func verifyCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("formd backup verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprintln(stderr, "Usage: formd backup verify DIR") }
	if err := parseFlags(fs, args); err != nil {
		return 2
	}
	if fs.NArg() != 1 {
		fs.Usage()
		return 2
	}
	dir := fs.Arg(0)
	ctx := context.Background()
	m, err := backup.Verify(ctx, server.BackupDrivers(), dir)
	if err == nil {
		// Whole is not enough: this binary must be able to restore it
		// (the same check restore makes).
		var known map[string]int
		if known, err = server.KnownSchemas(ctx); err == nil {
			err = backup.CheckRestorable(dir, m, known, release.Version())
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "formd backup verify: %v\n", err)
		return 1
	}
	printManifest(stdout, m)
	fmt.Fprintf(stdout, "%s is whole: every file matches the manifest and passes SQLite's integrity check\n", dir)
	return 0
}

func printManifest(w io.Writer, m backup.Manifest) {
	fmt.Fprintf(w, "written by formd %s, from %s to %s\n", m.Formd, m.Started.Format(time.RFC3339), m.Finished.Format(time.RFC3339))
	for _, f := range m.Files {
		schema := ""
		if f.Schema > 0 {
			schema = fmt.Sprintf("  schema %d", f.Schema)
		}
		fmt.Fprintf(w, "  %-12s %12d bytes%s\n", f.Name, f.Size, schema)
	}
	if m.UploadsElsewhere != "" {
		fmt.Fprintf(w, "  uploads' files: NOT in this backup: they live in %s (--uploads); keep them with the bucket's own versioning or replication\n", m.UploadsElsewhere)
	} else {
		var n int
		var size int64
		for _, u := range m.Uploads {
			n += len(u.IDs)
			size += u.Size
		}
		fmt.Fprintf(w, "  uploads/      %12d bytes  %d files of %d uploads", size, len(m.Uploads), n)
		if len(m.UploadsGone)+len(m.UploadsDamaged) > 0 {
			fmt.Fprintf(w, "; not held: %d erased since the store's copy, %d damaged in --data", len(m.UploadsGone), len(m.UploadsDamaged))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "journal entries: %d; store entries by status:", m.Journaled)
	statuses := slices.Sorted(maps.Keys(m.Entries))
	for _, s := range statuses {
		fmt.Fprintf(w, " %s %d", s, m.Entries[s])
	}
	fmt.Fprintln(w)
}
