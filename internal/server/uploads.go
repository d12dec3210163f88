package server

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/export"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads"
	"github.com/formd/formd/internal/uploads/clamd"
	"github.com/formd/formd/internal/uploads/links"
	"github.com/formd/formd/internal/uploads/s3objects"
	"github.com/prometheus/client_golang/prometheus"
)

// uploadExpireEvery is how often unclaimed uploads past their expiry are
// looked for: every minute, or every quarter of a shorter expiry, so
// that an upload is gone at most a quarter of its expiry late.
func uploadExpireEvery(expiry time.Duration) time.Duration {
	return max(min(time.Minute, expiry/4), time.Second)
}

// openUploads makes the uploads service: the bytes of uploads being
// received under --data/uploads, those of complete uploads there too or
// in the bucket of --uploads s3://… that every instance shares; records
// in the store, download links signed with a key derived from the
// installation's secret. With --uploads s3 the parts of an upload still
// being sent are in the bucket too, so any instance continues it (no
// sticky sessions needed), one request at a time under the upload's
// lock in the store (uploadLocks).
func (s *Server) openUploads(ctx context.Context, secret []byte, reg prometheus.Registerer) error {
	var objs uploads.Objects
	var locks store.UploadLocks
	if loc := s.cfg.UploadsS3; loc != nil {
		var err error
		if locks, err = uploadLocks(s.cfg, s.Store); err != nil {
			return err
		}
		o, err := s3objects.New(ctx, *loc)
		if err != nil {
			return err
		}
		objs = o
	}
	if w := localUploadsWarning(s.cfg); w != "" {
		s.log.Warn(w, "data", s.cfg.Data)
	}
	cfg := uploads.Config{
		Dir: filepath.Join(s.cfg.Data, "uploads"), Objects: objs, Expiry: s.cfg.UploadExpiry, Logger: s.log,
		// Entries journaled but not decided keep the uploads they name.
		Backlog:  s.Journal,
		ClientIP: func(r *http.Request) string { return intake.ClientIP(r, s.cfg.TrustedProxies) },
		Limits:   s.cfg.UploadLimits, Reserve: s.cfg.UploadReserve, Registerer: reg,
		Proof: &uploads.Proof{Signer: challenge.NewSigner(secret), Spend: s.Store},
	}
	if s.cfg.Clamd != "" {
		c, err := clamd.Parse(s.cfg.Clamd)
		if err != nil {
			return fmt.Errorf("--clamd: %w", err)
		}
		cfg.Scanner = c
	}
	if locks != nil {
		cfg.Locks = locks
	}
	u, err := uploads.New(s.Store, s.Forms, cfg)
	if err != nil {
		return err
	}
	s.Uploads = u
	s.Links = links.New(secret, s.cfg.PublicURL, s.cfg.LinkTTL, time.Now)
	return nil
}

// localUploadsWarning is said at start-up when this instance keeps its
// uploads in its own data directory while its store can be shared by
// several instances (issue 34: with separate data directories an upload
// made through one instance was 404 on another, silently); "" otherwise.
func localUploadsWarning(cfg config.Config) string {
	if cfg.UploadsS3 != nil || cfg.StoreDriver().OneInstance {
		return ""
	}
	return "uploads are kept in this instance's data directory (--data): other instances sharing this store cannot serve them " +
		"(an upload made through one is not found on another) unless every instance has the same --data on shared storage; " +
		"for several instances use --uploads s3://… (one bucket for all)"
}

// uploadLocks are the locks uploads in a shared bucket are written
// under: the store's (store.UploadLocker) when it has them; none (the
// uploads service's in memory) when the store serves one instance
// (drivers.Driver.OneInstance: the embedded sqlite store, whose data
// directory one instance holds); and otherwise a start-up error naming
// the setting, as for the fast path: a store shared by several instances
// without them (a wrapper that hides them) would let two instances write
// one upload at once.
func uploadLocks(cfg config.Config, st Store) (store.UploadLocks, error) {
	if l, ok := st.(store.UploadLocker); ok {
		return l.UploadLocks(), nil
	}
	if cfg.StoreDriver().OneInstance {
		return nil, nil
	}
	return nil, fmt.Errorf("setting uploads (--uploads s3://…, FORMD_UPLOADS): the store (%T) cannot lock uploads across instances (store.UploadLocker), "+
		"which several instances sharing a bucket need; use a store that can (postgres), or --uploads data on one instance", st)
}

// filesFor lists an entry's files with links valid for ttl (0: --link-ttl)
// that start with --public-url, else with base (an export for people).
func (s *Server) filesFor(base string, ttl time.Duration) export.FileLister {
	if s.cfg.PublicURL != "" {
		base = ""
	}
	l := s.Links.With(base, ttl)
	return func(ctx context.Context, entryID string) (map[string][]links.File, error) {
		return l.Files(ctx, s.Store, entryID)
	}
}

// entryFiles lists an entry's files with fresh signed links.
func (s *Server) entryFiles(ctx context.Context, entryID string) (map[string][]links.File, error) {
	return s.Links.Files(ctx, s.Store, entryID)
}
