// Package release names the formd release this binary is, and keeps the
// rule between a binary and data written by another: a binary opens data
// of its own schema or an older one (migrating it), and refuses data of a
// newer schema by name, before changing anything.
package release

import (
	"errors"
	"fmt"
	"runtime/debug"
)

// version is stamped at build time:
//
//	go build -ldflags "-X github.com/formd/formd/internal/release.version=v1.2.3" ./cmd/formd
//
// Without it, Version falls back to the module version of the build (set
// by go install module@version), then to "dev".
var version = ""

// commit may be stamped the same way (…/internal/release.commit=…) for
// builds without version control information (-buildvcs=false).
var commit = ""

// Version is this binary's release, such as v1.2.3, or "dev".
func Version() string {
	if version != "" {
		return version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// Commit is the commit this binary was built from (12 hex digits, with
// "-dirty" when the work tree had changes), or "" when the build did not
// record it (go test, a build outside the repository).
func Commit() string {
	if commit != "" {
		return commit
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}

// Name is how the data records the binary that wrote it: the version and,
// when known, the commit, such as "v1.2.3 (0123456789ab)".
func Name() string {
	if c := Commit(); c != "" {
		return Version() + " (" + c + ")"
	}
	return Version()
}

// Schema is what one file or database says of its schema.
type Schema struct {
	// What is the part of the data: "journal" or "store".
	What string
	// Where is the file's path or the database's address (no password).
	Where string
	// Empty says the file or database holds none of formd's tables yet
	// (a new one, or none at all).
	Empty bool
	// Version is the schema version the data has (0 as well for the
	// journal files of releases before the journal counted versions).
	Version int
	// Known is the newest schema version this binary knows.
	Known int
	// Unknown are versions the data records that this binary does not
	// have (a newer release's migrations); any makes the data too new.
	Unknown []int
	// WrittenBy is the release that last opened the data for writing
	// (Name), "" when no release recorded it (releases before the record
	// began).
	WrittenBy string
}

// TooNew says the data has a schema newer than this binary knows.
func (s Schema) TooNew() bool { return s.Version > s.Known || len(s.Unknown) > 0 }

// ErrTooNew marks data of a newer schema than this binary knows
// (TooNewError).
var ErrTooNew = errors.New("the data has a newer schema than this binary knows")

// TooNewError refuses data of a newer schema: it names both versions and
// what to do.
type TooNewError struct{ Schema Schema }

func (e *TooNewError) Error() string {
	s := e.Schema
	by := s.WrittenBy
	if by == "" {
		by = "a newer release"
	}
	unknown := ""
	if len(s.Unknown) > 0 && s.Version <= s.Known {
		unknown = fmt.Sprintf(", not its migrations %v", s.Unknown)
	}
	return fmt.Sprintf("%s %s: this data was written by formd %s (schema %d); this binary, formd %s, knows schema %d%s; run formd %s or newer (nothing was changed)",
		s.What, s.Where, by, s.Version, Name(), s.Known, unknown, by)
}

// Unwrap makes errors.Is(err, ErrTooNew) true.
func (e *TooNewError) Unwrap() error { return ErrTooNew }

// Check refuses a schema newer than this binary knows.
func Check(s Schema) error {
	if s.TooNew() {
		return &TooNewError{Schema: s}
	}
	return nil
}
