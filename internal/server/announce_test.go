package server

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/formd/formd/internal/store"
)

// A batch's outcomes for one instance are cut into announcements under
// the bus's limit, in order, each a JSON array listenForOutcomes reads,
// none lost or repeated; an outcome larger than the limit alone is left
// to the poll of the store.
func TestAnnouncementsStayUnderTheLimit(t *testing.T) {
	t.Parallel()
	outs := make([]store.Outcome, 200)
	for i := range outs {
		outs[i] = store.Outcome{ID: fmt.Sprintf("e%d", i), Form: "f", Key: fmt.Sprintf("k%d", i), Decision: "stored", Status: "stored"}
	}
	one, _ := json.Marshal(outs[0])
	huge := store.Outcome{ID: "huge", Form: "f", Key: strings.Repeat("k", 5000)}
	for _, tc := range []struct {
		name        string
		outs        []store.Outcome
		limit       int
		minChunks   int
		wantSkipped int
	}{
		{"all in one", outs, 1 << 20, 1, 0},
		{"many under a small limit", outs, 10 * len(one), 20, 0},
		{"one each at the least limit", outs[:5], len(one) + 2, 5, 0},
		{"an outcome over the limit", append([]store.Outcome{huge}, outs[:10]...), 1000, 1, 1},
		{"nothing", nil, 1000, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chunks, skipped, err := announcements(tc.outs, tc.limit)
			if err != nil || skipped != tc.wantSkipped || len(chunks) < tc.minChunks {
				t.Fatalf("%d chunks, %d skipped, %v; want at least %d chunks, %d skipped", len(chunks), skipped, err, tc.minChunks, tc.wantSkipped)
			}
			var got []string
			for _, c := range chunks {
				if len(c) > tc.limit {
					t.Fatalf("an announcement of %d bytes, over the limit %d", len(c), tc.limit)
				}
				var part []store.Outcome
				if err := json.Unmarshal(c, &part); err != nil || len(part) == 0 {
					t.Fatalf("announcement %q: %v", c, err)
				}
				for _, o := range part {
					got = append(got, o.ID)
				}
			}
			var want []string
			for _, o := range tc.outs {
				if o.ID != "huge" {
					want = append(want, o.ID)
				}
			}
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("announced %v, want %v", got, want)
			}
		})
	}
}
