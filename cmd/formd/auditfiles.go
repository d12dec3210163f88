package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/uploads"
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/formd/formd/internal/uploads/s3objects"
)

// maxAuditListed bounds how many missing or orphaned files audit names.
const maxAuditListed = 20

// auditFiles is formd audit's part about uploads: every claimed file's
// bytes stored, and no stored bytes that nothing references. It says
// whether all is well.
func auditFiles(ctx context.Context, cfg config.Config, st uploads.AuditStore, stdout io.Writer) (bool, error) {
	dir := dirobjects.DirBytes(filepath.Join(cfg.Data, "uploads"))
	var bytes uploads.ByteIndex = dir
	where := dir.Where
	if loc := cfg.UploadsS3; loc != nil {
		// The bucket every instance keeps complete uploads in.
		objs, err := s3objects.New(ctx, *loc)
		if err != nil {
			return false, err
		}
		bytes, where = objs, objs.Where
	}
	a, err := uploads.AuditFiles(ctx, st, bytes, time.Now())
	if err != nil {
		return false, err
	}
	for i, m := range a.Missing {
		if i == maxAuditListed {
			fmt.Fprintf(stdout, "  … and %d more\n", len(a.Missing)-i)
			break
		}
		fmt.Fprintf(stdout, "file missing: upload %s of entry %s\n", m.Upload, m.Entry)
	}
	for i, name := range a.Orphans {
		if i == maxAuditListed {
			fmt.Fprintf(stdout, "  … and %d more\n", len(a.Orphans)-i)
			break
		}
		fmt.Fprintf(stdout, "file not referenced: %s\n", where(name))
	}
	for i, name := range a.Damaged {
		if i == maxAuditListed {
			fmt.Fprintf(stdout, "  … and %d more\n", len(a.Damaged)-i)
			break
		}
		fmt.Fprintf(stdout, "file damaged: %s no longer has the SHA-256 it is named by (restore it from a backup)\n", filepath.Join(cfg.Data, "uploads", name))
	}
	for i, name := range a.Unlinked {
		if i == maxAuditListed {
			fmt.Fprintf(stdout, "  … and %d more\n", len(a.Unlinked)-i)
			break
		}
		fmt.Fprintf(stdout, "file not referenced: %s (no upload links to it)\n", filepath.Join(cfg.Data, "uploads", name))
	}
	for i, d := range a.FailedDeletions {
		if i == maxAuditListed {
			fmt.Fprintf(stdout, "  … and %d more\n", len(a.FailedDeletions)-i)
			break
		}
		fmt.Fprintf(stdout, "file not deleted: upload %s (erased or expired), %d failed attempts, the last at %s: %s\n",
			d.ID, d.Attempts, d.TriedAt.UTC().Format(time.RFC3339), d.LastError)
	}
	if a.Deleting > 0 {
		fmt.Fprintf(stdout, "uploads whose bytes are queued for deletion: %d, of which failed at least once: %d (the server tries them again at every pass)\n",
			a.Deleting, len(a.FailedDeletions))
	}
	fmt.Fprintf(stdout, "uploads: %d, claimed by kept entries: %d, their bytes missing: %d, stored files nothing references: %d, damaged: %d\n",
		a.Uploads, a.Claimed, len(a.Missing), len(a.Orphans)+len(a.Unlinked), len(a.Damaged))
	if len(a.Orphans)+len(a.Unlinked) > 0 {
		fmt.Fprintln(stdout, "files nothing references are left by a deletion cut short; delete them once you have looked")
	}
	return a.OK(), nil
}
