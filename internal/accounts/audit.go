package accounts

import (
	"context"
	"errors"
	"fmt"
	"slices"
)

// Audit page sizes.
const (
	DefaultAuditLimit = 50
	MaxAuditLimit     = 500
)

// Record adds an entry to the audit log, for actions outside this package
// (cancelling an entry, editing a form, an export). At defaults to now;
// Actor is Principal.String() of who did it.
func (s *Service) Record(ctx context.Context, e Entry) error {
	if e.Actor == "" || e.Action == "" {
		return errors.New("record audit entry: actor and action are required")
	}
	if e.At.IsZero() {
		e.At = s.now()
	}
	e.ID = 0
	if err := s.st.AppendAudit(ctx, e); err != nil {
		return fmt.Errorf("record audit entry: %w", err)
	}
	return nil
}

// Audit lists the audit log newest first, a page of f.Limit (default 50,
// at most 500) entries with an ID below f.Before (0: from the newest).
// The next page is the one before the last entry's ID.
//
// A principal of every site sees every entry, including those of no site
// (accounts, sign-ins); any other sees only its sites' entries, and asking
// for a site outside them is ErrForbidden.
func (s *Service) Audit(ctx context.Context, by Principal, f AuditFilter) ([]Entry, error) {
	for _, site := range f.Sites {
		if !by.Can(Read, site) {
			return nil, fmt.Errorf("read audit log of site %q: %w", site, ErrForbidden)
		}
	}
	if !by.roleAllows(Read) {
		return nil, fmt.Errorf("read audit log: %w", ErrForbidden)
	}
	if len(f.Sites) == 0 || slices.Contains(f.Sites, AllSites) {
		f.Sites = nil // every site the principal has
		if !by.EverySite() {
			if len(by.Sites) == 0 {
				return nil, nil
			}
			f.Sites = by.Sites
		}
	}
	switch {
	case f.Limit <= 0:
		f.Limit = DefaultAuditLimit
	case f.Limit > MaxAuditLimit:
		f.Limit = MaxAuditLimit
	}
	out, err := s.st.ListAudit(ctx, f)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	return out, nil
}
