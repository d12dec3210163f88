package problem_test

import (
	"fmt"
	"testing"

	_ "github.com/formd/formd/internal/accounts" // their sentinels
	"github.com/formd/formd/internal/journal"
	"github.com/formd/formd/internal/problem"
	_ "github.com/formd/formd/internal/store"
	_ "github.com/formd/formd/internal/uploads" // and its tiers'
)

// Every sentinel of the journal, the store, the accounts and the uploads names a code
// of Codes, and From answers a wrapped one with that code and its message.
func TestSentinelsHaveCodes(t *testing.T) {
	all := problem.Sentinels()
	if len(all) < 25 {
		t.Fatalf("%d sentinels, want those of accounts, journal and store", len(all))
	}
	for msg, code := range all {
		if _, ok := problem.Codes[code]; !ok {
			t.Errorf("sentinel %q names code %q, which problem.Codes lacks", msg, code)
		}
	}
	p := problem.From(fmt.Errorf("append: %w", journal.ErrOverloaded))
	if p.Code != problem.CodeOverloaded || p.Detail != journal.ErrOverloaded.Error() || p.Status != 503 {
		t.Fatalf("From(wrapped ErrOverloaded) = %+v", p)
	}
}
