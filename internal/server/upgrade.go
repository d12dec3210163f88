package server

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/formd/formd/internal/form"
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/store"
)

// upgradeHashes finishes the upgrade of data from releases that hashed
// without the installation's secret (before c44d8d9, such as b3f9691, the
// first), once the secret and the forms are known and before anything is
// decided or answered: the store's live entries get today's keyed claims,
// so an old participant is still one, and the journal's entries get the
// digest that recognizes a retry of an old key (answered with its first
// outcome) and today's claims (so an entry left undecided is decided
// against today's participants). Both drivers do it once, on the mark their
// migrations set; on other data it costs one read each.
func (s *Server) upgradeHashes(ctx context.Context) error {
	if r, ok := s.Store.(store.ClaimRekeyer); ok {
		n, err := r.RekeyClaims(ctx, func(formID string, data json.RawMessage) []string {
			if acc := s.revalidate(formID, data); acc != nil {
				return acc.Claims
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("upgrade the claims of entries older than keyed claims: %w", err)
		}
		if n > 0 {
			s.log.Info("upgraded: participant claims keyed with the installation's secret", "entries", n)
		}
	}
	if d, ok := s.Journal.(journal.LegacyRehasher); ok {
		n, err := d.RehashLegacy(ctx, func(e journal.Entry) ([32]byte, []string, bool) {
			digest, ok := s.Hasher.DataDigest(e.Form, e.Data)
			if !ok {
				return digest, nil, false
			}
			claims := e.Claims
			if acc := s.revalidate(e.Form, e.Data); acc != nil {
				claims = acc.Claims
			}
			return digest, claims, true
		})
		if err != nil {
			return fmt.Errorf("upgrade the journal's entries older than keyed hashes: %w", err)
		}
		if n > 0 {
			s.log.Info("upgraded: request digests and keyed claims recorded for entries journaled before them", "entries", n)
		}
	}
	return nil
}

// revalidate validates an entry's data again under its form's definition
// today, with today's keyed hashes; nil when the form is gone or the data
// no longer validates (the entry keeps what it had).
func (s *Server) revalidate(formID string, data json.RawMessage) *form.Accepted {
	f := s.Forms.Get(formID)
	if f == nil {
		return nil
	}
	in, err := form.EntryValues(data)
	if err != nil {
		return nil
	}
	acc, err := f.Validate(in, s.Hasher)
	if err != nil {
		return nil
	}
	return acc
}
