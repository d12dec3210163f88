// Package s3objects is the uploads' bucket tier (--uploads s3://…): the
// bytes of complete uploads as objects of an S3-compatible bucket that
// every instance of a deployment shares (Bucket, uploads.Objects), and
// the parts of uploads being received in the same bucket (Parts, a tusd
// store), so that any instance continues an upload.
package s3objects

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/formd/formd/internal/uploads/tier"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
)

// Location is a parsed --uploads s3://bucket[/prefix]?endpoint=…
// setting.
type Location struct {
	Bucket string
	// Prefix starts every object's key ("" or ending in "/").
	Prefix string
	// Endpoint is host[:port] of the S3 API; Secure says https.
	Endpoint string
	Secure   bool
	// Region is the bucket's region ("" for the server's default).
	Region string
	// PathStyle asks for http://endpoint/bucket/key addresses rather than
	// http://bucket.endpoint/key (most self-hosted servers want path).
	PathStyle bool
}

// ParseURL reads an --uploads setting of the form
//
//	s3://BUCKET[/PREFIX]?endpoint=https://HOST[:PORT]&region=R&style=path|virtual
//
// endpoint defaults to AWS (https://s3.amazonaws.com), style to path for
// an endpoint that is given and virtual for AWS. Credentials are never
// in the URL (it is printed in logs and process lists): they come from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY (and AWS_SESSION_TOKEN), the
// AWS shared credentials file, or the machine's IAM role.
func ParseURL(v string) (Location, error) {
	var loc Location
	u, err := url.Parse(v)
	if err != nil || u.Scheme != "s3" || u.Host == "" {
		return loc, fmt.Errorf("%q is not s3://BUCKET[/PREFIX]?endpoint=https://HOST:PORT", v)
	}
	if u.User != nil {
		return loc, errors.New("put no credentials in the URL: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY in formd's environment")
	}
	loc.Bucket = u.Host
	if p := strings.Trim(u.Path, "/"); p != "" {
		loc.Prefix = p + "/"
	}
	q := u.Query()
	for k := range q {
		switch k {
		case "endpoint", "region", "style":
		default:
			return loc, fmt.Errorf("unknown parameter %q in %q: use endpoint, region or style", k, v)
		}
	}
	loc.Endpoint, loc.Secure, loc.PathStyle = "s3.amazonaws.com", true, false
	if e := q.Get("endpoint"); e != "" {
		eu, err := url.Parse(e)
		if err != nil || (eu.Scheme != "http" && eu.Scheme != "https") || eu.Host == "" || strings.Trim(eu.Path, "/") != "" {
			return loc, fmt.Errorf("endpoint %q is not http(s)://HOST[:PORT], such as http://127.0.0.1:8333", e)
		}
		loc.Endpoint, loc.Secure, loc.PathStyle = eu.Host, eu.Scheme == "https", true
	}
	switch q.Get("style") {
	case "":
	case "path":
		loc.PathStyle = true
	case "virtual":
		loc.PathStyle = false
	default:
		return loc, fmt.Errorf("style %q is not path or virtual", q.Get("style"))
	}
	loc.Region = q.Get("region")
	return loc, nil
}

// Bucket keeps objects in an S3-compatible bucket, key Prefix+id.
type Bucket struct {
	c   *minio.Client
	loc Location
	tr  *http.Transport
}

// s3Timeout bounds the requests other than an object's transfer (a
// bucket check, a stat, a delete), so that a bucket that does not answer
// is a 503 rather than a hung request.
const s3Timeout = 15 * time.Second

// New connects to the bucket and checks that it is there.
func New(ctx context.Context, loc Location) (*Bucket, error) {
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConnsPerHost:   64,
		IdleConnTimeout:       90 * time.Second,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
	lookup := minio.BucketLookupDNS
	if loc.PathStyle {
		lookup = minio.BucketLookupPath
	}
	creds := credentials.NewChainCredentials([]credentials.Provider{
		&credentials.EnvAWS{},
		&credentials.FileAWSCredentials{Filename: os.Getenv("AWS_SHARED_CREDENTIALS_FILE"), Profile: os.Getenv("AWS_PROFILE")},
		&credentials.IAM{Client: &http.Client{Transport: tr, Timeout: 5 * time.Second}},
	})
	c, err := minio.New(loc.Endpoint, &minio.Options{
		Creds: creds, Secure: loc.Secure, Transport: tr, Region: loc.Region, BucketLookup: lookup,
		// A bucket that is down answers 503 quickly, for the client to
		// retry after Retry-After, rather than after minutes of retries.
		MaxRetries: 2,
	})
	if err != nil {
		return nil, fmt.Errorf("--uploads: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	ok, err := c.BucketExists(cctx, loc.Bucket)
	if err != nil {
		return nil, fmt.Errorf("--uploads: reach bucket %s at %s: %w (check the endpoint, and AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY in formd's environment)", loc.Bucket, loc.Endpoint, err)
	}
	if !ok {
		return nil, fmt.Errorf("--uploads: bucket %s does not exist at %s: create it (such as: aws s3 mb s3://%s), or name another", loc.Bucket, loc.Endpoint, loc.Bucket)
	}
	return &Bucket{c: c, loc: loc, tr: tr}, nil
}

// Parts is the store of the parts of uploads being received, in the
// same bucket (s3parts.go), staging each part in tmp.
func (s *Bucket) Parts(ctx context.Context, tmp string) (*Parts, error) {
	return newParts(ctx, s.loc, s.tr, tmp)
}

func (s *Bucket) key(id string) string { return s.loc.Prefix + id }

// Keep puts the file as the object. S3 makes an object visible only once
// the whole PUT (or every part of a multipart upload) is stored, so a
// failure leaves nothing readable behind; a part upload left by a failed
// multipart PUT is aborted by the client.
func (s *Bucket) Keep(ctx context.Context, id, path string, size int64, sum [32]byte) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("keep upload bytes: %w", err)
	}
	defer f.Close()
	_, err = s.c.PutObject(ctx, s.loc.Bucket, s.key(id), f, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		// 16 MiB parts, one at a time: the memory a PUT takes is bounded by
		// the part, not by the file.
		PartSize: 16 << 20, NumThreads: 1,
	})
	return s.err("store upload bytes in the bucket", err)
}

func (s *Bucket) Open(ctx context.Context, id string) (io.ReadSeekCloser, error) {
	o, err := s.c.GetObject(ctx, s.loc.Bucket, s.key(id), minio.GetObjectOptions{})
	if err != nil {
		return nil, s.err("read upload bytes from the bucket", err)
	}
	if _, err := o.Stat(); err != nil {
		o.Close()
		if minio.ToErrorResponse(err).Code == minio.NoSuchKey {
			return nil, tier.ErrNoObject
		}
		return nil, s.err("read upload bytes from the bucket", err)
	}
	return o, nil
}

func (s *Bucket) Delete(ctx context.Context, id string) error {
	cctx, cancel := context.WithTimeout(ctx, s3Timeout)
	defer cancel()
	err := s.c.RemoveObject(cctx, s.loc.Bucket, s.key(id), minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code == minio.NoSuchKey {
		return nil
	}
	return s.err("delete upload bytes from the bucket", err)
}

// err classifies the bucket's errors (bucketErr).
func (s *Bucket) err(op string, err error) error {
	if err == nil {
		return nil
	}
	return bucketErr(op, s.loc.Bucket, minio.ToErrorResponse(err).Code, err)
}

// bucketErr classifies an error of the bucket by its S3 error code: a
// bucket over its quota or out of room is tier.ErrStorageFull (507),
// anything else that kept the bytes from being stored or read is
// tier.ErrStorageUnavailable (503).
func bucketErr(op, bucket, code string, err error) error {
	switch code {
	case "QuotaExceeded", "XMinioStorageFull", "XMinioAdminBucketQuotaExceeded", "InsufficientStorage":
		return fmt.Errorf("%s (bucket %s): %w: %w", op, bucket, tier.ErrStorageFull, err)
	}
	return fmt.Errorf("%s (bucket %s): %w: %w", op, bucket, tier.ErrStorageUnavailable, err)
}

// CloseIdleConnections closes the client's idle keep-alive connections
// (a test's, which would outlive it).
func (s *Bucket) CloseIdleConnections() { s.tr.CloseIdleConnections() }
