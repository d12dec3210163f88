package server_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/server/servertest"
)

// TestReadyzSaysWhenTheJournalCannotWrite: once the journal cannot take
// appends (here its size budget is full, as a full disk would be), every
// submission gets 503 — and /readyz says not ready, so a load balancer
// stops sending people to this instance.
func TestReadyzSaysWhenTheJournalCannotWrite(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: big\nfields: [{name: note, type: text}]\n", servertest.Options{Config: func(c *config.Config) {
		c.JournalMaxSize = 1 << 20
	}})
	get := func(path string) (int, string) {
		resp, err := http.Get(h.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if code, body := get("/readyz"); code != 200 {
		t.Fatalf("readyz before: %d %s", code, body)
	}
	// Fill it with ever smaller entries until none fits any more: how
	// many pages a large one leaves depends on the file's own pages.
	n := 0
	for _, size := range []int{200 << 10, 16 << 10, 1 << 10, 1} {
		filler := strings.Repeat("x", size)
		refused := false
		for range 100 {
			n++
			body := fmt.Sprintf(`{"note":"n%d","attachment":%q}`, n, filler)
			resp, err := http.Post(h.URL+"/v1/forms/big/submissions", "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 503 {
				refused = true
				break
			}
		}
		if !refused {
			t.Fatalf("entries of %d bytes never filled the journal: the test cannot tell anything", size)
		}
	}
	code, body := get("/readyz")
	if code != 503 || !strings.Contains(body, "journal cannot take submissions") {
		t.Fatalf("readyz with a full journal: %d %s", code, body)
	}
}
