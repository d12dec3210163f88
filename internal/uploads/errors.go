package uploads

import (
	"github.com/formd/formd/internal/problem"
	"github.com/formd/formd/internal/uploads/tier"
)

// The service's sentinel errors. Each that reaches a client is a
// problem.Sentinel: its code is given once, where it is made, and
// problem.From (or tier.TusError, on tusd's side) maps it whichever tier
// or lock produced it. Those a tier returns are tier's, named here too.

// errNoObject is an upload whose bytes are not in the store.
var errNoObject = tier.ErrNoObject

// ErrStorageFull is a disk with no room for an upload's bytes: the
// request is answered 507 with Retry-After and nothing of it is kept.
var ErrStorageFull = tier.ErrStorageFull

// ErrStorageUnavailable is an object store (the S3 bucket) that could not
// be reached or refused to store: 503 with Retry-After, nothing claimed.
var ErrStorageUnavailable = tier.ErrStorageUnavailable

// storageErr classifies an error of writing bytes: a full disk (ENOSPC,
// EDQUOT) is ErrStorageFull, wrapped with its cause.
var storageErr = tier.StorageErr

// ErrLocksUnavailable is a store whose upload locks could not be had:
// the request is answered 503 with Retry-After and nothing of it was
// written.
var ErrLocksUnavailable = problem.Sentinel("the store that locks uploads could not be reached", problem.CodeUploadUnavailable)
