package server

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/uploads"
)

// uploadExpireEvery is how often unclaimed uploads past their expiry are
// looked for.
const uploadExpireEvery = time.Minute

// openUploads makes the uploads service: bytes under --data/uploads,
// records in the store, download links signed with a key derived from
// the installation's secret. With several instances each keeps the bytes
// it received in its own --data: uploads to one instance are claimed
// through the shared store from any, but served only by it (an
// S3-compatible store shared by every instance is not built yet).
func (s *Server) openUploads(secret []byte) error {
	cfg := uploads.Config{
		Dir: filepath.Join(s.cfg.Data, "uploads"), Expiry: s.cfg.UploadExpiry, Logger: s.log,
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
