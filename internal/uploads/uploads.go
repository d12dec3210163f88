// Package uploads takes a file field's bytes before the submission that
// names them: resumable uploads over the tus protocol 1.0 (creation,
// expiration, termination) at /v1/forms/{form}/uploads, served by tusd as
// a library over a directory under --data, each write fsync'd, or with
// --uploads s3 over the bucket (s3parts.go), so that any instance
// continues an upload. An upload
// belongs to one form and field; once every byte is durable its SHA-256
// and its type sniffed from the bytes are recorded in the store, and a
// type the field does not accept is refused (422 file-rejected) and
// deleted. The submission claims the upload in its decision (package
// store); an upload nobody claims expires and its bytes are deleted
// (RunOnce).
package uploads

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/formd/formd/internal/atomicfile"
	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/store"
	"github.com/formd/formd/internal/uploads/dirobjects"
	"github.com/formd/formd/internal/uploads/links"
	"github.com/formd/formd/internal/uploads/s3objects"
	"github.com/formd/formd/internal/uploads/tier"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/tus/tusd/v2/pkg/handler"
	"github.com/tus/tusd/v2/pkg/memorylocker"
	expslog "golang.org/x/exp/slog"
)

// Store is the part of the store uploads are recorded in.
type Store interface {
	CreateUpload(ctx context.Context, u store.Upload) error
	CreateUploadWithin(ctx context.Context, u store.Upload, l store.UploadLimits, now time.Time) error
	CompleteUpload(ctx context.Context, id string, sum [32]byte, typ string) error
	Upload(ctx context.Context, id string) (store.Upload, error)
	ExpiredUploads(ctx context.Context, now time.Time, limit int) ([]string, error)
	DeleteUpload(ctx context.Context, id string) (bool, error)
	ErasedUploads(ctx context.Context, limit int) ([]string, error)
	DropErasedUpload(ctx context.Context, id string) (bool, error)
	ExpireUpload(ctx context.Context, id string, now time.Time) (bool, error)
	PendingDeletions(ctx context.Context, limit int) ([]store.UploadDeletion, error)
	DeletionDone(ctx context.Context, id string) error
	DeletionFailed(ctx context.Context, id, reason string, at time.Time) error
}

// Forms finds a form by id.
type Forms interface {
	Get(id string) *form.Form
}

// Config tunes the uploads.
type Config struct {
	// Dir holds the bytes of the uploads being received (--data/uploads),
	// and those of complete uploads under Dir/objects unless Objects is
	// set (dirobjects); made 0700 if missing.
	Dir string
	// Objects is where complete uploads' bytes live: nil for Dir itself
	// (the embedded tier, dirobjects), or an S3-compatible bucket
	// (s3objects.New).
	Objects Objects
	// Expiry is how long an upload no entry claimed is kept
	// (--upload-expiry).
	Expiry time.Duration
	// Scanner, when set, scans every upload before it can be claimed
	// (--clamd; scan.go).
	Scanner Scanner
	// Locks, when set, are the locks every instance of a deployment
	// sees (PostgreSQL advisory locks, see CrossLocks): an upload is
	// written by one request at a time across the instances. Nil is
	// tusd's memory locker, for one instance.
	Locks CrossLocks
	// Backlog, when set, is the journal whose undecided entries may name
	// uploads (expire.go): the expiry pass keeps every upload that had
	// not expired when the oldest of them was received.
	Backlog Backlog
	// ClientIP is the address a request came from (intake.ClientIP with
	// the trusted proxies); the TCP peer when nil. Its SourceKey is what
	// the per-address budgets count by.
	ClientIP func(*http.Request) string
	// Limits are the budgets of the uploads no submission has claimed,
	// per address and per form (budget.go); zero limits are none (the
	// server's flags have defaults).
	Limits store.UploadLimits
	// Reserve is the free space kept on the disk of Dir: uploads that
	// would leave less are refused with 507 and Retry-After; none when
	// zero (the server's --upload-reserve is 1 GiB).
	Reserve int64
	// FreeSpace says how many bytes are free on the disk of a directory;
	// the file system's count by default.
	FreeSpace func(dir string) (int64, error)
	// Proof checks the proof-of-work of uploads to forms that ask for
	// one; nil refuses every upload to such a form.
	Proof *Proof
	// Registerer takes the uploads' metrics; nil for none.
	Registerer prometheus.Registerer
	// Now is the clock; time.Now by default.
	Now    func() time.Time
	Logger *slog.Logger
}

// Backlog says how far behind the decisions are (journal.Journal's Stats).
type Backlog interface {
	Stats(ctx context.Context) (journal.Stats, error)
}

// Service serves the uploads and expires them.
type Service struct {
	cfg   Config
	st    Store
	forms Forms
	files durableStore
	objs  Objects
	// core is the store of the parts tusd writes: files (the parts in
	// Dir), or, with --uploads s3, parts in the bucket (s3parts.go),
	// which every instance continues.
	core   handler.DataStore
	parts  *s3objects.Parts
	bucket *s3objects.Bucket
	// staging is where the parts in the bucket are staged on their way
	// there, and an object being checked (Dir/s3-staging).
	staging string
	tus     *handler.UnroutedHandler
	metrics *metrics
}

type formKey struct{}

// New makes the service.
func New(st Store, forms Forms, cfg Config) (*Service, error) {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Expiry <= 0 {
		return nil, errors.New("uploads: the expiry must be positive")
	}
	if cfg.FreeSpace == nil {
		cfg.FreeSpace = dirobjects.FreeSpace
	}
	if err := atomicfile.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("create the uploads directory: %w", err)
	}
	if err := os.Chmod(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("restrict the uploads directory: %w", err)
	}
	s := &Service{cfg: cfg, st: st, forms: forms, files: newDurableStore(cfg.Dir), objs: cfg.Objects, metrics: newMetrics(cfg.Registerer, max(cfg.Reserve, 0))}
	if s.objs == nil {
		d, err := openDirMigrated(st, cfg.Dir, cfg.Logger)
		if err != nil {
			return nil, err
		}
		s.objs = d
	}
	composer := handler.NewStoreComposer()
	if so, ok := s.objs.(*s3objects.Bucket); ok {
		// The parts are in the bucket; Dir only stages each part on its
		// way there (and an object being checked), so what a killed
		// process left of that goes at the start.
		tmp := filepath.Join(cfg.Dir, "s3-staging")
		if err := os.RemoveAll(tmp); err != nil {
			return nil, fmt.Errorf("clear the uploads staging directory: %w", err)
		}
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return nil, fmt.Errorf("create the uploads staging directory: %w", err)
		}
		p, err := so.Parts(context.Background(), tmp)
		if err != nil {
			return nil, err
		}
		p.UseIn(composer)
		s.core, s.parts, s.bucket, s.staging = p, p, so, tmp
	} else {
		s.files.UseIn(composer)
		s.core = s.files
	}
	if cfg.Locks != nil {
		cl := newCrossLocker(cfg.Locks)
		cl.UseIn(composer)
		if s.parts != nil {
			s.parts.Asked = cl.asked
		}
	} else {
		memorylocker.New().UseIn(composer)
	}
	tus, err := handler.NewUnroutedHandler(handler.Config{
		StoreComposer:             composer,
		BasePath:                  "/v1/uploads/", // Location is rewritten to the form's path
		MaxSize:                   form.MaxMaxSize,
		DisableDownload:           true,
		DisableConcatenation:      true,
		Cors:                      &handler.CorsConfig{Disable: true},
		PreUploadCreateCallback:   s.preCreate,
		PreFinishResponseCallback: s.preFinish,
		// tusd logs every request at info; its errors are answers that
		// formd rewrites (rewriter), so its own log is not kept.
		Logger: expslog.New(expslog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		return nil, fmt.Errorf("uploads: %w", err)
	}
	s.tus = tus
	return s, nil
}

// Register adds the tus routes to mux. tusd reads X-HTTP-Method-Override
// on a POST (for clients such as WeChat's wx.request that cannot send
// PATCH), so POST on an upload's address is a PATCH or a DELETE when the
// header says so.
func (s *Service) Register(mux *http.ServeMux) {
	mux.Handle("POST /v1/forms/{form}/uploads", s.route(s.tus.PostFile, false))
	mux.Handle("OPTIONS /v1/forms/{form}/uploads", s.route(options, false))
	byMethod := func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodHead:
			s.tus.HeadFile(w, r)
		case http.MethodPatch:
			s.tus.PatchFile(w, r)
		case http.MethodDelete:
			s.tus.DelFile(w, r)
		case http.MethodOptions:
			options(w, r)
		default:
			w.Header().Set("Allow", "HEAD, PATCH, DELETE, OPTIONS, POST with X-HTTP-Method-Override")
			writeProblem(w, r, problem.New(problem.CodeMethodNotAllowed, "use HEAD, PATCH or DELETE on an upload"), http.StatusMethodNotAllowed)
		}
	}
	for _, m := range []string{"HEAD", "PATCH", "DELETE", "POST", "OPTIONS"} {
		mux.Handle(m+" /v1/forms/{form}/uploads/{id}", s.route(byMethod, true))
	}
}

// options is the answer to OPTIONS, which tusd's middleware writes
// (Tus-Version, Tus-Extension, Tus-Max-Size) before it would get here.
func options(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }

// route checks the form (and, for an upload's address, that the upload
// is the form's), hands the request to tusd with the path tusd reads the
// id from, and rewrites its answer: the Location of the form's path,
// expiration among the extensions, and errors as problem documents.
func (s *Service) route(h http.HandlerFunc, upload bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		formID := r.PathValue("form")
		if s.forms.Get(formID) == nil {
			writeProblem(w, r, problem.New(problem.CodeFormNotFound, "no form has this id"), 0)
			return
		}
		if origin := r.Header.Get("Origin"); origin != "" && !sameOrigin(r, origin) {
			// An origin the form does not list gets its preflight answered
			// and a 403 it can read (issue 34): the SDK says "this site may
			// not send to this form" instead of retrying a network error.
			// The refusal comes before the upload is looked up or read.
			allowed := s.forms.Get(formID).AllowsOrigin(origin)
			hdr := w.Header()
			hdr.Set("Access-Control-Allow-Origin", origin)
			hdr.Add("Vary", "Origin")
			preflight := r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != ""
			if !allowed && !preflight {
				writeProblem(w, r, problem.New(problem.CodeOriginNotAllowed, "this form does not accept uploads from this origin"), 0)
				return
			}
			hdr.Set("Access-Control-Expose-Headers", "Location, Upload-Offset, Upload-Length, Upload-Expires, Tus-Resumable, Tus-Version, Tus-Extension, Tus-Max-Size, Retry-After")
			if preflight {
				hdr.Set("Access-Control-Allow-Methods", "POST, HEAD, PATCH, DELETE, OPTIONS")
				hdr.Set("Access-Control-Allow-Headers", "Tus-Resumable, Upload-Length, Upload-Metadata, Upload-Offset, Content-Type, X-HTTP-Method-Override, X-Requested-With")
				hdr.Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		rw := &rewriter{ResponseWriter: w, r: r, base: "/v1/forms/" + formID + "/uploads/"}
		if upload {
			id := r.PathValue("id")
			u, err := s.st.Upload(r.Context(), id)
			switch {
			case errors.Is(err, store.ErrUploadNotFound) || err == nil && u.Form != formID:
				writeProblem(w, r, problem.New(problem.CodeUploadNotFound, "no upload of this form has this id"), http.StatusNotFound)
				return
			case err != nil:
				writeProblem(w, r, problem.From(err), 0)
				return
			}
			w.Header().Set("Upload-Expires", u.ExpiresAt.UTC().Format(http.TimeFormat))
			if s.serveComplete(w, r, u) {
				return
			}
			if isPatch(r) {
				// The bytes still to come must leave the reserve free.
				if p := s.checkReserve(0); p != nil {
					writeProblem(w, r, p, 0)
					return
				}
			}
			r2 := *r
			r2.URL = new(*r.URL)
			r2.URL.Path = id
			r = &r2
		}
		r = s.withSource(r.WithContext(context.WithValue(r.Context(), formKey{}, formID)))
		s.tus.Middleware(h).ServeHTTP(rw, r)
		rw.finish()
	})
}

// serveComplete answers the tus requests on a complete upload itself,
// from the store, so that any instance answers them whichever one
// received the bytes (with --uploads s3 the parts are gone once the
// object is in the bucket): HEAD gives the whole length as the offset, a
// PATCH at the end is a no-op, DELETE removes an upload no entry claimed.
// A PATCH on an upload whose bytes are all here but whose completion
// failed (the bucket was down) completes it, and on the disk tier so does
// a HEAD. It says whether it answered.
func (s *Service) serveComplete(w http.ResponseWriter, r *http.Request, u store.Upload) bool {
	method := r.Method
	if o := r.Header.Get("X-HTTP-Method-Override"); method == http.MethodPost && o != "" {
		method = strings.ToUpper(o)
	}
	if !u.Complete {
		// A HEAD on the disk tier completes too: the client that asks
		// where its upload stands after formd stopped between the last
		// byte and the completion (whose submission's decision would find
		// it incomplete) learns it is done.
		if method != http.MethodPatch && (method != http.MethodHead || s.parts != nil) {
			return false
		}
		// With the parts in the bucket, looking costs requests to it:
		// only a PATCH at the end can be one that finishes the upload.
		if s.parts != nil && r.Header.Get("Upload-Offset") != strconv.FormatInt(u.Size, 10) {
			return false
		}
		if !s.written(r.Context(), u) {
			return false
		}
		var err error
		if u, err = s.complete(r.Context(), u.ID); err != nil {
			var rej *rejection
			if errors.As(err, &rej) {
				writeProblem(w, r, rej.problem(), 0)
			} else {
				writeProblem(w, r, problem.From(err), 0)
			}
			return true
		}
	}
	h := w.Header()
	h.Set("Tus-Resumable", "1.0.0")
	h.Set("Cache-Control", "no-store")
	size := strconv.FormatInt(u.Size, 10)
	switch method {
	case http.MethodHead:
		h.Set("Upload-Offset", size)
		h.Set("Upload-Length", size)
		w.WriteHeader(http.StatusOK)
	case http.MethodPatch:
		if r.Header.Get("Upload-Offset") != size {
			writeProblem(w, r, problem.New(problem.CodeUploadOffset, "the upload is complete: its offset is its length, "+size), http.StatusConflict)
			return true
		}
		h.Set("Upload-Offset", size)
		w.WriteHeader(http.StatusNoContent)
	case http.MethodDelete:
		if u.Entry != "" {
			writeProblem(w, r, problem.New(problem.CodeUploadUsed, "a submission has this upload; it is deleted with the entry's data"), 0)
			return true
		}
		if err := s.remove(r.Context(), u.ID); err != nil {
			writeProblem(w, r, problem.From(err), 0)
			return true
		}
		w.WriteHeader(http.StatusNoContent)
	default:
		return false
	}
	return true
}

// isPatch says r writes bytes: a PATCH, or a POST that overrides to one.
func isPatch(r *http.Request) bool {
	return r.Method == http.MethodPatch ||
		r.Method == http.MethodPost && strings.EqualFold(r.Header.Get("X-HTTP-Method-Override"), http.MethodPatch)
}

// written says every byte of an incomplete upload is in its parts (here,
// or in the bucket).
func (s *Service) written(ctx context.Context, u store.Upload) bool {
	up, err := s.core.GetUpload(ctx, u.ID)
	if err != nil {
		return false
	}
	info, err := up.GetInfo(ctx)
	return err == nil && info.Offset == u.Size
}

// sameOrigin says the Origin is this server (the hosted page).
func sameOrigin(r *http.Request, origin string) bool {
	u, err := url.Parse(origin)
	return err == nil && strings.EqualFold(u.Host, r.Host)
}

// preCreate authorises a creation: the form has the file field named in
// Upload-Metadata ("field"), the declared length is within its
// max_size. The upload is recorded before its files are made, so that an
// upload whose files never came is still found and expired.
func (s *Service) preCreate(ev handler.HookEvent) (handler.HTTPResponse, handler.FileInfoChanges, error) {
	var none handler.FileInfoChanges
	formID, _ := ev.Context.Value(formKey{}).(string)
	f := s.forms.Get(formID)
	if f == nil {
		return handler.HTTPResponse{}, none, tusProblem(problem.New(problem.CodeFormNotFound, "no form has this id"), 0)
	}
	name := ev.Upload.MetaData["field"]
	fd, ok := f.Field(name)
	if !ok || fd.Type != form.TypeFile {
		return handler.HTTPResponse{}, none, tusProblem(problem.New(problem.CodeFileRejected,
			fmt.Sprintf("give the file field in Upload-Metadata (field %q is not a file field of this form)", name)), 0)
	}
	if ev.Upload.SizeIsDeferred {
		return handler.HTTPResponse{}, none, tusProblem(problem.New(problem.CodeInvalidRequest, "give the file's length in Upload-Length"), 0)
	}
	if ev.Upload.Size > fd.MaxSizeOf() {
		return handler.HTTPResponse{}, none, tusProblem(problem.New(problem.CodePayloadTooLarge,
			fmt.Sprintf("field %s takes files of at most %s; this one is %d bytes", name, form.Size(fd.MaxSizeOf()), ev.Upload.Size)), 0)
	}
	now := s.cfg.Now().UTC()
	source, _ := ev.Context.Value(sourceKey{}).(string)
	u := store.Upload{ID: newID(), Form: formID, Field: name, Size: ev.Upload.Size, Name: fileName(ev.Upload.MetaData),
		CreatedAt: now, ExpiresAt: now.Add(s.cfg.Expiry), Source: source}
	if p := s.admit(ev.Context, f, ev.Upload.MetaData, u.Size, u.ID, now); p != nil {
		return handler.HTTPResponse{}, none, tusProblem(p, 0)
	}
	if err := s.create(ev.Context, u, now); err != nil {
		return handler.HTTPResponse{}, none, tier.TusError(err)
	}
	resp := handler.HTTPResponse{Header: handler.HTTPHeader{"Upload-Expires": u.ExpiresAt.Format(http.TimeFormat)}}
	// The metadata kept is the field and the name: not the spent
	// solution.
	return resp, handler.FileInfoChanges{ID: u.ID, MetaData: handler.MetaData{"field": name, "filename": u.Name}}, nil
}

// preFinish runs once every byte is durable (tusd calls it after
// FinishUpload, which fsyncs): it fixes the upload's digest and type.
func (s *Service) preFinish(ev handler.HookEvent) (handler.HTTPResponse, error) {
	u, err := s.complete(ev.Context, ev.Upload.ID)
	if err != nil {
		var rej *rejection
		if errors.As(err, &rej) {
			return handler.HTTPResponse{}, tusProblem(rej.problem(), 0)
		}
		if inf, ok := refusedUpload(err); ok {
			return handler.HTTPResponse{}, tusProblem(inf.problem(), 0)
		}
		p := problem.From(err)
		if p.Status >= 500 {
			s.cfg.Logger.Warn("complete an upload", "upload", ev.Upload.ID, "err", err)
		}
		return handler.HTTPResponse{}, tusProblem(p, 0)
	}
	return handler.HTTPResponse{Header: handler.HTTPHeader{"Upload-Expires": u.ExpiresAt.UTC().Format(http.TimeFormat)}}, nil
}

// keepTimeout bounds the storing of a complete upload's bytes as its
// object (a PUT of up to max_size to the bucket).
const keepTimeout = 10 * time.Minute

// rejection is a complete upload whose bytes its field does not take:
// of a type it does not accept, or, when detail says so, an image of
// more pixels than it takes (pixels.go).
type rejection struct{ field, typ, detail string }

func (r *rejection) Error() string {
	if r.detail != "" {
		return "file rejected: " + r.detail
	}
	return "file rejected: field " + r.field + " does not accept " + r.typ
}

func (r *rejection) problem() *problem.Problem {
	if r.detail != "" {
		return problem.New(problem.CodeFileRejected, r.detail)
	}
	return problem.New(problem.CodeFileRejected, fmt.Sprintf("field %s does not accept this file: its bytes are %s", r.field, r.typ))
}

// complete fixes a fully written upload's SHA-256 and sniffed type in the
// store, or deletes it when its field does not accept the type. The
// digest is the one taken while the bytes arrived (sums), or, when this
// instance did not see them all (it restarted), one made now. The bytes
// are made the upload's object (moved to the bucket, with --uploads s3)
// before the store records the upload complete, so that an upload that
// can be claimed always has its bytes where every instance reads them.
func (s *Service) complete(ctx context.Context, id string) (store.Upload, error) {
	u, err := s.st.Upload(ctx, id)
	if err != nil {
		return u, err
	}
	if u.Complete {
		return u, nil
	}
	if s.parts != nil {
		return s.completeInBucket(ctx, u)
	}
	path := filepath.Join(s.cfg.Dir, id)
	rs := s.files.sums.take(id, u.Size)
	if rs == nil {
		if rs, err = hashPrefix(path, u.Size); err != nil {
			return u, fmt.Errorf("upload %s: %w", id, err)
		}
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return u, fmt.Errorf("open upload: %w", err)
	}
	defer f.Close()
	sum, typ, _, err := s.check(ctx, ctx, u, f, rs)
	if err != nil {
		return u, err
	}
	// The object is stored and the upload recorded complete even if the
	// request's context ends meanwhile (the client went away, or tusd
	// gave up on the request while a large PUT to the bucket ran), so
	// that its retry finds the upload complete.
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	if err := s.objs.Keep(kctx, id, path, u.Size, sum); err != nil {
		return u, err
	}
	if err := s.st.CompleteUpload(kctx, id, sum, typ); err != nil {
		return u, err
	}
	// The bytes are the upload's object now: its parts go.
	if err := s.removeParts(kctx, id); err != nil {
		s.cfg.Logger.Warn("remove an upload's parts after storing it", "upload", id, "err", err)
	}
	u.SHA256, u.Type, u.Complete = sum, typ, true
	return u, nil
}

// completeInBucket is complete with --uploads s3, whose parts are in the
// bucket: the multipart upload is completed (tusd has done it on the
// last PATCH; an instance killed in between has not), which makes the
// object; the object is copied to a staging file here, its SHA-256 and
// first bytes taken on the way (streamed: the memory is a copy buffer,
// any instance can do it), the type sniffed and checked, location
// metadata removed and the bytes scanned as on the embedded tier; a
// cleaning that changed the bytes puts them as the object again. Then
// the store records the upload complete, and only then the parts'
// leftovers (the .info object) go.
func (s *Service) completeInBucket(ctx context.Context, u store.Upload) (store.Upload, error) {
	id := u.ID
	kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), keepTimeout)
	defer cancel()
	up, err := s.parts.GetUpload(kctx, id)
	if err != nil {
		return u, fmt.Errorf("upload %s: %w", id, err)
	}
	info, err := up.GetInfo(kctx)
	if err != nil {
		return u, fmt.Errorf("upload %s: %w", id, err)
	}
	if info.Offset != u.Size {
		return u, fmt.Errorf("upload %s: %d of its %d bytes are in the bucket", id, info.Offset, u.Size)
	}
	if ok, err := s.bucket.HasBytes(kctx, id); err != nil {
		return u, err
	} else if !ok {
		if err := up.FinishUpload(kctx); err != nil {
			return u, fmt.Errorf("upload %s: %w", id, err)
		}
	}
	rs := &runningSum{h: sha256.New()}
	f, err := s.bucket.Fetch(kctx, id, s.staging, u.Size, rs)
	if err != nil {
		return u, fmt.Errorf("upload %s: %w", id, err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	sum, typ, changed, err := s.check(ctx, kctx, u, f, rs)
	if err != nil {
		return u, err
	}
	if changed {
		if err := s.objs.Keep(kctx, id, f.Name(), u.Size, sum); err != nil {
			return u, err
		}
	}
	if err := s.st.CompleteUpload(kctx, id, sum, typ); err != nil {
		return u, err
	}
	if err := s.parts.Remove(kctx, id); err != nil {
		s.cfg.Logger.Warn("remove an upload's parts after completing it", "upload", id, "err", err)
	}
	u.SHA256, u.Type, u.Complete = sum, typ, true
	return u, nil
}

// check is the one rule of what a complete upload's bytes (the file f,
// whose SHA-256 and first bytes rs took as they were written) must be
// before it can be claimed, on either tier: a type, sniffed from the
// bytes, that its field accepts; photos without their location metadata
// and the bytes scanned (safety.go). An upload refused is removed (with
// rmctx, which outlives a request that went away); a cleaning that
// changed the bytes is hashed again, and changed says so.
func (s *Service) check(ctx, rmctx context.Context, u store.Upload, f *os.File, rs *runningSum) (sum [32]byte, typ string, changed bool, err error) {
	typ = sniff(rs.head)
	fd, ok := s.fieldOf(u)
	var rej *rejection
	if !ok || !fd.Accepts(typ) {
		rej = &rejection{field: u.Field, typ: typ}
	} else if tp := checkPixels(fd, f, u.Size, typ); tp != nil {
		rej = &rejection{field: u.Field, typ: typ, detail: tp.problem().Detail}
	}
	if rej != nil {
		if err := s.remove(rmctx, u.ID); err != nil {
			return sum, typ, false, errors.Join(rej, err)
		}
		return sum, typ, false, rej
	}
	if changed, err = s.clean(ctx, f, u.Size, u.Field, typ); err != nil {
		if inf, ok := refusedUpload(err); ok {
			if err := s.remove(rmctx, u.ID); err != nil {
				return sum, typ, false, errors.Join(inf, err)
			}
		}
		return sum, typ, false, err
	}
	if changed {
		sum, err = digest(f, u.Size)
		return sum, typ, true, err
	}
	rs.h.Sum(sum[:0])
	return sum, typ, false, nil
}

func (s *Service) fieldOf(u store.Upload) (form.Field, bool) {
	f := s.forms.Get(u.Form)
	if f == nil {
		return form.Field{}, false
	}
	fd, ok := f.Field(u.Field)
	return fd, ok && fd.Type == form.TypeFile
}

// sniff is the type of a file's first bytes (net/http's sniffing
// algorithm, the WHATWG one browsers use), without parameters other than
// a text charset.
func sniff(head []byte) string {
	return http.DetectContentType(head)
}

// remove deletes an upload's record, queueing the deletion of its bytes
// in the same transaction, then the bytes, and takes them off the queue;
// a stop or a failure in between leaves the deletion to the next pass
// (RunOnce). A claimed upload is never removed: its record stays and so
// do its bytes.
func (s *Service) remove(ctx context.Context, id string) error {
	ok, err := s.st.DeleteUpload(ctx, id)
	if err != nil || !ok {
		return err
	}
	if err := s.removeBytes(ctx, id); err != nil {
		if rerr := s.st.DeletionFailed(ctx, id, err.Error(), s.cfg.Now()); rerr != nil {
			err = errors.Join(err, rerr)
		}
		return err
	}
	return s.st.DeletionDone(ctx, id)
}

// removeBytes deletes an upload's bytes: its object, and its parts if
// they are still here.
func (s *Service) removeBytes(ctx context.Context, id string) error {
	if err := s.removeParts(ctx, id); err != nil {
		return err
	}
	return s.objs.Delete(ctx, id)
}

// removeParts deletes the files tusd keeps of an upload in the parts
// directory, and with --uploads s3 its parts in the bucket (the
// multipart upload aborted, the .part and .info objects deleted).
func (s *Service) removeParts(ctx context.Context, id string) error {
	if s.parts != nil {
		if err := s.parts.Remove(ctx, id); err != nil {
			return err
		}
		// Parts a release before the parts were in the bucket left here.
	}
	s.files.sums.drop(id)
	for _, p := range []string{filepath.Join(s.cfg.Dir, id), filepath.Join(s.cfg.Dir, id+".info")} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete upload bytes: %w", err)
		}
	}
	return nil
}

// Open reads the bytes of a complete upload, from whichever instance or
// bucket holds them; store.ErrUploadNotFound when they are missing.
func (s *Service) Open(ctx context.Context, id string) (Object, error) {
	if !validID(id) {
		return nil, store.ErrUploadNotFound
	}
	o, err := s.objs.Open(ctx, id)
	if errors.Is(err, errNoObject) {
		return nil, fmt.Errorf("upload %s: %w", id, store.ErrUploadNotFound)
	}
	return o, err
}

func validID(id string) bool {
	if len(id) != 32 {
		return false
	}
	_, err := hex.DecodeString(id)
	return err == nil
}

func newID() string {
	var b [16]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// fileName is the name the client gave (tus-js-client sends filename;
// name is common too), cut to a sane length; it is sanitized again
// whenever it is used in a header.
func fileName(md handler.MetaData) string {
	n := md["filename"]
	if n == "" {
		n = md["name"]
	}
	n = links.CleanName(filepath.Base(strings.ReplaceAll(n, `\`, "/")))
	if n == "." || n == "/" {
		n = ""
	}
	if len(n) > 255 {
		n = n[:255]
	}
	return n
}
