package store

import (
	"context"
	"encoding/json"
)

// ClaimRekeyer is a store that may hold participant claims made before
// claims were keyed with the installation's secret (releases before
// c44d8d9, such as b3f9691, the first, hashed them without a key). Such a
// store marks itself when it is upgraded; RekeyClaims then gives each live
// entry (stored, waitlisted) the claims claim computes from its data, in
// one transaction, and clears the mark, so that an old participant is
// still one for today's keyed claims. It says how many entries it
// changed; on a store without the mark it does nothing.
type ClaimRekeyer interface {
	RekeyClaims(ctx context.Context, claim func(form string, data json.RawMessage) []string) (int, error)
}
