package server

import (
	"path/filepath"
	"time"

	"github.com/formd/formd/internal/uploads"
)

// uploadExpireEvery is how often unclaimed uploads past their expiry are
// looked for.
const uploadExpireEvery = time.Minute

// openUploads makes the uploads service: bytes under --data/uploads,
// records in the store. With several instances each keeps the bytes it
// received in its own --data: uploads to one instance are claimed through
// the shared store from any, but served only by it (an S3-compatible
// store shared by every instance is not built yet).
func (s *Server) openUploads() error {
	u, err := uploads.New(s.Store, s.Forms, uploads.Config{
		Dir: filepath.Join(s.cfg.Data, "uploads"), Expiry: s.cfg.UploadExpiry, Logger: s.log,
	})
	if err != nil {
		return err
	}
	s.Uploads = u
	return nil
}
