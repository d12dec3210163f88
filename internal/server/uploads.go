package server

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/challenge"
	"github.com/formd/formd/internal/intake"
	"github.com/formd/formd/internal/store/pgstore"
	"github.com/formd/formd/internal/uploads"
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
// lock in the store when it is PostgreSQL (advisory locks); with SQLite
// there is one instance and the lock is in memory.
func (s *Server) openUploads(ctx context.Context, secret []byte, reg prometheus.Registerer) error {
	var objs uploads.Objects
	if loc := s.cfg.UploadsS3; loc != nil {
		o, err := uploads.NewS3Objects(ctx, *loc)
		if err != nil {
			return err
		}
		objs = o
	}
	cfg := uploads.Config{
		Dir: filepath.Join(s.cfg.Data, "uploads"), Objects: objs, Expiry: s.cfg.UploadExpiry, Logger: s.log,
		ClientIP: func(r *http.Request) string { return intake.ClientIP(r, s.cfg.TrustedProxies) },
		Limits:   s.cfg.UploadLimits, Reserve: s.cfg.UploadReserve, Registerer: reg,
		Proof: &uploads.Proof{Signer: challenge.NewSigner(secret), Spend: s.Store},
	}
	if s.cfg.Clamd != "" {
		c, err := uploads.ParseClamd(s.cfg.Clamd)
		if err != nil {
			return fmt.Errorf("--clamd: %w", err)
		}
		cfg.Scanner = c
	}
	if pg, ok := s.Store.(*pgstore.Store); ok && objs != nil {
		cfg.Locks = pg.UploadLocks()
	}
	u, err := uploads.New(s.Store, s.Forms, cfg)
	if err != nil {
		return err
	}
	s.Uploads = u
	s.Links = uploads.NewLinks(secret, s.cfg.PublicURL, s.cfg.LinkTTL, time.Now)
	return nil
}

// entryFiles lists an entry's files with fresh signed links.
func (s *Server) entryFiles(ctx context.Context, entryID string) (map[string][]uploads.File, error) {
	return s.Links.Files(ctx, s.Store, entryID)
}
