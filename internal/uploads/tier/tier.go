// Package tier is what the uploads service and its object tiers
// (dirobjects, the directory under --data; s3objects, a bucket) share:
// the errors a tier returns, each mapped to its problem code once
// (problem.Sentinel), and the form of such an answer that tusd writes
// (TusError). The interface a tier
// meets is the service's own (uploads.Objects); a tier does not import
// the service.
package tier

import (
	"errors"
	"fmt"
	"strconv"
	"syscall"

	"github.com/formd/formd/internal/problem"
	"github.com/tus/tusd/v2/pkg/handler"
)

// ErrNoObject is an upload whose bytes are not in the tier.
var ErrNoObject = errors.New("the upload's bytes are missing")

// ErrStorageFull is a disk (or a bucket's quota) with no room for an
// upload's bytes: the request is answered 507 with Retry-After and
// nothing of it is kept.
var ErrStorageFull = problem.Sentinel("the server's disk has no room for the upload's bytes", problem.CodeUploadStorageFull)

// ErrStorageUnavailable is an object store (the S3 bucket) that could not
// be reached or refused to store: 503 with Retry-After, nothing claimed.
var ErrStorageUnavailable = problem.Sentinel("the upload storage could not be reached", problem.CodeUploadUnavailable)

// StorageErr classifies an error of writing bytes: a full disk (ENOSPC,
// EDQUOT) is ErrStorageFull, wrapped with its cause.
func StorageErr(op string, err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		return fmt.Errorf("%s: %w: %w", op, ErrStorageFull, err)
	}
	return fmt.Errorf("%s: %w", op, err)
}

// problemType is the media type of every error answer.
const problemType = "application/problem+json"

// TusError is err as a tusd hook or store returns it: the problem
// problem.From maps it to (a sentinel's code, status and Retry-After),
// which tusd writes as it is. The one way the uploads' sentinels reach a
// tus client.
func TusError(err error) error { return TusProblem(problem.From(err), 0) }

// TusProblem is p as the error a tusd hook or store returns, so that
// tusd answers with the problem document (at status when it is not 0).
func TusProblem(p *problem.Problem, status int) error {
	if status != 0 {
		p.Status = status
	}
	hdr := handler.HTTPHeader{"Content-Type": problemType}
	if p.RetryAfter > 0 {
		hdr["Retry-After"] = strconv.Itoa(p.RetryAfter)
	}
	return handler.Error{ErrorCode: p.Code, Message: p.Detail, HTTPResponse: handler.HTTPResponse{StatusCode: p.Status, Body: string(p.Body()), Header: hdr}}
}
