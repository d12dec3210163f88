package s3objects

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/formd/formd/internal/uploads/tier"
	"github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/s3store"
)

// Parts keeps the parts of the uploads being received in the bucket
// itself (tusd's s3store), so that every instance of a deployment
// continues an upload whichever one received its first bytes: the
// bytes of an upload are an S3 multipart upload on the object's own key
// (Prefix+id), every part but the last 5 to 8 MiB; what a PATCH
// brought short of a part is the object Prefix+"parts/"+id+".part", the
// upload's tus state Prefix+"parts/"+id+".info". A PATCH is answered
// once its bytes are stored parts or that object, so the offset any
// instance's HEAD gives (the parts listed, plus the .part's size) is
// bytes in the bucket. The last byte completes the multipart upload,
// which makes the object (Prefix+id) where Bucket reads it.
//
// tusd names an s3store upload id+"+"+multipart id; formd's addresses
// and records keep the plain id, and the multipart id is read from the
// .info object (GetUpload).
type Parts struct {
	store  s3store.S3Store
	c      *s3.Client
	bucket string
	prefix string // the objects' prefix: an upload's key is prefix+id
	meta   string // prefix+"parts/"
	// Asked, when set, says the request holding an upload's lock was
	// asked to let go (the service's cross-instance locker).
	Asked func(id string) bool
}

var (
	_ handler.DataStore           = (*Parts)(nil)
	_ handler.TerminaterDataStore = (*Parts)(nil)
)

// newParts makes the parts store of the bucket at loc, with the
// credentials of the AWS default chain (AWS_ACCESS_KEY_ID /
// AWS_SECRET_ACCESS_KEY, the shared credentials file, the machine's
// role), the same formd reads the objects with. tmp is a local
// directory where s3store stages each part on its way to the bucket.
func newParts(ctx context.Context, loc Location, tr *http.Transport, tmp string) (*Parts, error) {
	region := loc.Region
	if region == "" {
		region = "us-east-1" // SeaweedFS, MinIO and the like take any
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, awsconfig.WithRegion(region), awsconfig.WithRetryMaxAttempts(3))
	if err != nil {
		return nil, fmt.Errorf("--uploads: %w", err)
	}
	// The objects' transport (its timeouts, the system's roots as the
	// objects' client has them), shared by both clients.
	cfg.HTTPClient = &http.Client{Transport: tr}
	scheme := "http://"
	if loc.Secure {
		scheme = "https://"
	}
	c := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if loc.Endpoint != "s3.amazonaws.com" {
			o.BaseEndpoint = aws.String(scheme + loc.Endpoint)
		}
		o.UsePathStyle = loc.PathStyle
		// The checksums the SDK adds by default (CRC32 trailers) are
		// not understood by every S3-compatible server; s3store sends
		// Content-MD5 and a SHA-256 of each part itself.
		o.RequestChecksumCalculation = aws.RequestChecksumCalculationWhenRequired
		o.ResponseChecksumValidation = aws.ResponseChecksumValidationWhenRequired
	})
	st := s3store.New(loc.Bucket, c)
	st.ObjectPrefix = loc.Prefix
	st.MetadataObjectPrefix = loc.Prefix + "parts/"
	st.TemporaryDirectory = tmp
	// Parts of 8 MiB (s3store's default is 50), at most two staged
	// ahead of the one being put: the local disk a PATCH takes is a few
	// parts (s3store stages on disk, not in memory), not its body.
	// Sixteen parts are put at once across the instance's uploads.
	st.PreferredPartSize = 8 << 20
	st.MaxBufferedParts = 2
	st.SetConcurrentPartUploads(16)
	return &Parts{store: st, c: c, bucket: loc.Bucket, prefix: loc.Prefix, meta: loc.Prefix + "parts/"}, nil
}

// UseIn makes the parts store the composer's core and terminater.
func (p *Parts) UseIn(c *handler.StoreComposer) {
	c.UseCore(p)
	c.UseTerminater(p)
}

func (p *Parts) NewUpload(ctx context.Context, info handler.FileInfo) (handler.Upload, error) {
	id := info.ID
	up, err := p.store.NewUpload(ctx, info)
	if err != nil {
		// A multipart upload made before the .info failed is aborted
		// by the removal of the upload (expiry), which lists them.
		return nil, p.tusErr("create upload", err)
	}
	return &partUpload{up: up, id: id, p: p}, nil
}

func (p *Parts) GetUpload(ctx context.Context, id string) (handler.Upload, error) {
	full, err := p.tusID(ctx, id)
	if err != nil {
		return nil, err
	}
	up, err := p.store.GetUpload(ctx, full)
	if err != nil {
		return nil, p.tusErr("find upload", err)
	}
	return &partUpload{up: up, id: id, p: p}, nil
}

func (p *Parts) AsTerminatableUpload(up handler.Upload) handler.TerminatableUpload {
	return up.(*partUpload)
}

// tusID is s3store's name of the upload id (id+"+"+multipart id), from
// its .info object; handler.ErrNotFound when there is none (never
// created, or completed and cleaned up).
func (p *Parts) tusID(ctx context.Context, id string) (string, error) {
	res, err := p.c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(p.meta + id + ".info")})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) || apiCode(err) == "NoSuchKey" {
			return "", handler.ErrNotFound
		}
		return "", p.tusErr("find upload", err)
	}
	defer res.Body.Close()
	var info struct{ ID string }
	if err := json.NewDecoder(io.LimitReader(res.Body, 1<<20)).Decode(&info); err != nil {
		return "", p.tusErr("find upload", fmt.Errorf("read %s.info: %w", id, err))
	}
	return info.ID, nil
}

// Remove deletes every trace of an upload's parts: each multipart upload
// on its key is aborted (s3store's own, and one left by a creation that
// stopped before its .info was written), the .part and .info objects
// deleted. The object itself is Bucket' to delete.
func (p *Parts) Remove(ctx context.Context, id string) error {
	key := p.prefix + id
	var errs []error
	in := &s3.ListMultipartUploadsInput{Bucket: aws.String(p.bucket), Prefix: aws.String(key)}
	for {
		out, err := p.c.ListMultipartUploads(ctx, in)
		if err != nil {
			return p.storageErr("list an upload's parts", err)
		}
		for _, mu := range out.Uploads {
			if aws.ToString(mu.Key) != key {
				continue
			}
			_, err := p.c.AbortMultipartUpload(ctx, &s3.AbortMultipartUploadInput{Bucket: aws.String(p.bucket), Key: aws.String(key), UploadId: mu.UploadId})
			if err != nil && apiCode(err) != "NoSuchUpload" {
				errs = append(errs, p.storageErr("abort an upload's parts", err))
			}
		}
		if !aws.ToBool(out.IsTruncated) {
			break
		}
		in.KeyMarker, in.UploadIdMarker = out.NextKeyMarker, out.NextUploadIdMarker
	}
	for _, k := range []string{p.meta + id + ".part", p.meta + id + ".info"} {
		_, err := p.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(p.bucket), Key: aws.String(k)})
		if err != nil && apiCode(err) != "NoSuchKey" {
			errs = append(errs, p.storageErr("delete an upload's parts", err))
		}
	}
	return errors.Join(errs...)
}

// storageErr classifies the bucket's errors (bucketErr).
func (p *Parts) storageErr(op string, err error) error {
	return bucketErr(op, p.bucket, apiCode(err), err)
}

// tusErr is an error of s3store as tusd's handler answers it: its own
// errors (not found, offsets) as they are, a bucket that failed as the
// 503 or 507 problem with Retry-After.
func (p *Parts) tusErr(op string, err error) error {
	var he handler.Error
	if errors.As(err, &he) || errors.Is(err, context.Canceled) || errors.Is(err, handler.ErrUploadInterrupted) {
		return err
	}
	se := p.storageErr(op, err)
	return bucketError{tus: tier.TusError(se), err: se}
}

// bucketError is a failure of the bucket both as tusd answers it (the
// problem document, 503 or 507 with Retry-After) and as formd
// classifies it (tier.ErrStorageUnavailable, tier.ErrStorageFull).
type bucketError struct{ tus, err error }

func (e bucketError) Error() string   { return e.err.Error() }
func (e bucketError) Unwrap() []error { return []error{e.tus, e.err} }

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// partUpload is one upload of Parts, named by formd's id.
type partUpload struct {
	up handler.Upload
	id string
	p  *Parts
}

func (u *partUpload) GetInfo(ctx context.Context) (handler.FileInfo, error) {
	info, err := u.up.GetInfo(ctx)
	if err != nil {
		return info, u.p.tusErr("read upload", err)
	}
	info.ID = u.id
	return info, nil
}

// WriteChunk stores the chunk's bytes as parts (or the .part object)
// before it returns: the offset it adds is bytes in the bucket.
func (u *partUpload) WriteChunk(ctx context.Context, offset int64, src io.Reader) (int64, error) {
	if u.p.Asked != nil && u.p.Asked(u.id) {
		// Another request wants the upload before this one read a byte:
		// it goes first (the client of this one asks HEAD and goes on).
		return 0, handler.ErrUploadInterrupted
	}
	n, err := u.up.WriteChunk(ctx, offset, src)
	if err != nil {
		return n, u.p.tusErr("write upload", err)
	}
	return n, nil
}

func (u *partUpload) GetReader(ctx context.Context) (io.ReadCloser, error) {
	return u.up.GetReader(ctx)
}

// FinishUpload completes the multipart upload: the object is made.
func (u *partUpload) FinishUpload(ctx context.Context) error {
	if err := u.up.FinishUpload(ctx); err != nil {
		return u.p.tusErr("finish upload", err)
	}
	return nil
}

// Terminate removes the parts, and the object if the last byte had made
// it.
func (u *partUpload) Terminate(ctx context.Context) error {
	if err := u.p.Remove(ctx, u.id); err != nil {
		return u.p.tusErr("terminate upload", err)
	}
	_, err := u.p.c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(u.p.bucket), Key: aws.String(u.p.prefix + u.id)})
	if err != nil && apiCode(err) != "NoSuchKey" {
		return u.p.tusErr("terminate upload", err)
	}
	return nil
}

// Fetch copies a complete upload's object into a new file in dir,
// feeding every byte to w as well (the running digest and the head that
// is sniffed): streamed, the memory it takes is a copy buffer. The file
// is the caller's to close and remove.
func (s *Bucket) Fetch(ctx context.Context, id, dir string, size int64, w io.Writer) (*os.File, error) {
	o, err := s.Open(ctx, id)
	if err != nil {
		return nil, err
	}
	defer o.Close()
	f, err := os.CreateTemp(dir, ".fetch-*")
	if err != nil {
		return nil, tier.StorageErr("copy an upload to check it", err)
	}
	n, err := io.Copy(io.MultiWriter(f, w), o)
	if err == nil && n != size {
		err = fmt.Errorf("the object has %d of the upload's %d bytes", n, size)
	}
	if err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, s.err("read upload bytes from the bucket", err)
	}
	return f, nil
}

// Left lists the objects and the multipart uploads under the prefix
// (multipart ones as "multipart KEY"), keys without the prefix: what a
// test checks is gone.
func (p *Parts) Left(ctx context.Context) ([]string, error) {
	var left []string
	objs, err := p.c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(p.bucket), Prefix: aws.String(p.prefix)})
	if err != nil {
		return nil, err
	}
	for _, o := range objs.Contents {
		left = append(left, strings.TrimPrefix(aws.ToString(o.Key), p.prefix))
	}
	mus, err := p.c.ListMultipartUploads(ctx, &s3.ListMultipartUploadsInput{Bucket: aws.String(p.bucket), Prefix: aws.String(p.prefix)})
	if err != nil {
		return nil, err
	}
	for _, mu := range mus.Uploads {
		left = append(left, "multipart "+strings.TrimPrefix(aws.ToString(mu.Key), p.prefix))
	}
	return left, nil
}
