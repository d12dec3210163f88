package server

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/uploads"
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
// installation's secret. An upload still being sent is resumed on the
// instance that received its first bytes (its parts are there), so a
// load balancer in front of several instances keeps a client on one
// (sticky sessions) for resumption; a complete upload is claimed,
// answered (HEAD) and downloaded through any instance.
func (s *Server) openUploads(ctx context.Context, secret []byte) error {
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
	}
	if s.cfg.Clamd != "" {
		c, err := uploads.ParseClamd(s.cfg.Clamd)
		if err != nil {
			return fmt.Errorf("--clamd: %w", err)
		}
		cfg.Scanner = c
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
