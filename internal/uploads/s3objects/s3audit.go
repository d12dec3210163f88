package s3objects

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/minio/minio-go/v7"
)

// ListBytes lists the objects under the bucket's prefix, for the audit
// (ByteIndex): their names are the upload ids.
func (s *Bucket) ListBytes(ctx context.Context, fn func(string, time.Time) error) error {
	for o := range s.c.ListObjects(ctx, s.loc.Bucket, minio.ListObjectsOptions{Prefix: s.loc.Prefix, Recursive: true}) {
		if o.Err != nil {
			return s.err("list the bucket", o.Err)
		}
		name := strings.TrimPrefix(o.Key, s.loc.Prefix)
		if name == "" || strings.Contains(name, "/") {
			continue // not formd's: ids have no slash
		}
		if err := fn(name, o.LastModified); err != nil {
			return err
		}
	}
	return nil
}

// HasBytes says whether the upload's object is in the bucket.
func (s *Bucket) HasBytes(ctx context.Context, id string) (bool, error) {
	cctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	_, err := s.c.StatObject(cctx, s.loc.Bucket, s.key(id), minio.StatObjectOptions{})
	if err == nil {
		return true, nil
	}
	if minio.ToErrorResponse(err).Code == "NoSuchKey" {
		return false, nil
	}
	return false, fmt.Errorf("look for upload bytes: %w", s.err("stat an object", err))
}

// Where names the bucket and prefix an orphan of the audit is in.
func (s *Bucket) Where(name string) string {
	return "s3://" + s.loc.Bucket + "/" + s.key(name)
}
