package journal

import "context"

// DigestFiller is a journal that may hold entries journaled before request
// digests (releases before c44d8d9, such as b3f9691, the first). A retry
// is recognized by its digest or else by its fingerprint, and those
// entries' fingerprints were not keyed as today's are, so a retry of an
// old key would be refused as a reused key. Such a journal marks itself
// when it is upgraded; FillDigests then records for each entry without a
// digest the one digest computes from its data (false: none), and clears
// the mark. It says how many entries it filled; on a journal without the
// mark it does nothing.
type DigestFiller interface {
	FillDigests(ctx context.Context, digest func(Entry) ([32]byte, bool)) (int, error)
}
