package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/formd/formd/internal/uploads/s3objects"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// putBaseline PUTs the same bytes straight to the bucket of -uploads
// with minio-go (one PutObject per file, as a client of the bucket
// would), the baseline of the runs with a bucket.
type putBaseline struct {
	c   *minio.Client
	loc s3objects.Location
}

func newPutBaseline(raw string) (*putBaseline, error) {
	loc, err := s3objects.ParseURL(raw)
	if err != nil {
		return nil, err
	}
	lookup := minio.BucketLookupDNS
	if loc.PathStyle {
		lookup = minio.BucketLookupPath
	}
	c, err := minio.New(loc.Endpoint, &minio.Options{Creds: credentials.NewEnvAWS(), Secure: loc.Secure, Region: loc.Region, BucketLookup: lookup})
	if err != nil {
		return nil, err
	}
	return &putBaseline{c: c, loc: loc}, nil
}

// putMany PUTs n copies of body at once and times them; the objects
// are deleted after.
func (b *putBaseline) putMany(n int, body []byte) (time.Duration, error) {
	ctx := context.Background()
	errs := make(chan error, n)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, err := b.c.PutObject(ctx, b.loc.Bucket, fmt.Sprintf("%sbench-put-%d", b.loc.Prefix, i), bytes.NewReader(body), int64(len(body)),
				minio.PutObjectOptions{ContentType: "application/octet-stream"})
			errs <- err
		})
	}
	wg.Wait()
	took := time.Since(start)
	close(errs)
	for err := range errs {
		if err != nil {
			return 0, fmt.Errorf("PUT to the bucket: %w", err)
		}
	}
	for i := range n {
		b.c.RemoveObject(ctx, b.loc.Bucket, fmt.Sprintf("%sbench-put-%d", b.loc.Prefix, i), minio.RemoveObjectOptions{})
	}
	return took, nil
}

// ddMany runs n dd conv=fsync of src at once into dir and times them:
// the disk's own rate for the same bytes, written and fsync'd.
func ddMany(n int, src, dir string) (time.Duration, error) {
	errs := make(chan error, n)
	start := time.Now()
	for i := range n {
		go func() {
			out := filepath.Join(dir, fmt.Sprintf("dd-%d", i))
			b, err := exec.Command("dd", "if="+src, "of="+out, "bs=1M", "conv=fsync", "status=none").CombinedOutput()
			if err != nil {
				err = fmt.Errorf("dd: %v %s", err, b)
			}
			errs <- err
		}()
	}
	var err error
	for range n {
		err = errors.Join(err, <-errs)
	}
	d := time.Since(start)
	for i := range n {
		os.Remove(filepath.Join(dir, fmt.Sprintf("dd-%d", i)))
	}
	return d, err
}
