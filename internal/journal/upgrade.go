package journal

import "context"

// LegacyRehasher is a journal that may hold entries journaled before
// formd keyed its hashes with the installation's secret and recorded
// request digests (releases before c44d8d9, such as b3f9691, the first).
// A retry is recognized by its digest or else by its fingerprint, and an
// entry's participant claims decide whether it is a duplicate: with the
// unkeyed hashes of those entries, a retry of an old key would be refused
// as a reused key, and an entry left undecided would be decided with
// claims no new submission can meet. Such a journal marks itself when it
// is upgraded; RehashLegacy then records, for each entry without a
// digest, the digest and claims rehash computes from its data (ok false:
// leave it), and clears the mark, in one transaction. It says how many
// entries it changed; on a journal without the mark it does nothing.
type LegacyRehasher interface {
	RehashLegacy(ctx context.Context, rehash func(Entry) (digest [32]byte, claims []string, ok bool)) (int, error)
}
