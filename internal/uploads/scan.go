package uploads

import (
	"context"
	"fmt"
	"io"

	"github.com/formd/formd/internal/problem"
)

// Scanner looks for malware in an upload's bytes before the upload can
// be claimed (--clamd). Scan reads r to its end and says what it found:
// "" for nothing, else the name of what it found. An error means the
// bytes were not scanned (the scanner is down or refused them): the
// upload then waits, it is never claimed unscanned.
type Scanner interface {
	Scan(ctx context.Context, r io.Reader) (found string, err error)
}

// infection is an upload in which the scanner found something.
type infection struct{ field, found string }

func (i *infection) Error() string { return "file infected: field " + i.field + ": " + i.found }

func (i *infection) problem() *problem.Problem {
	return problem.New(problem.CodeFileInfected, fmt.Sprintf("the virus scanner found %s in the file for field %s; it was deleted", i.found, i.field))
}

// scanProblem is the answer while the scanner is down: the upload's
// bytes stay, and it can be claimed once a scan passes.
func scanProblem() *problem.Problem {
	return problem.New(problem.CodeScanUnavailable, "the file could not be scanned for viruses yet; it is kept: send the submission again after Retry-After seconds")
}

// scan passes an upload's bytes (read from r to its end) through the
// scanner, if there is one: nil when they are clean, *infection when
// not, and a scanProblem when the scan did not happen.
func (s *Service) scan(ctx context.Context, field string, r io.Reader) error {
	if s.cfg.Scanner == nil {
		return nil
	}
	found, err := s.cfg.Scanner.Scan(ctx, r)
	if err != nil {
		s.cfg.Logger.Warn("scan upload", "err", err)
		return fmt.Errorf("scan upload: %w", scanProblem())
	}
	if found != "" {
		return &infection{field: field, found: found}
	}
	return nil
}
