package server_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/formd/formd/internal/server/servertest"
)

// TestHostedResultPageReadsTheStatus: the page a plain post lands on
// shows the key's status as the status endpoint reads it (the hosted
// pages and the intake wired together).
func TestHostedResultPageReadsTheStatus(t *testing.T) {
	t.Parallel()
	h := servertest.Start(t, "id: f\nfields: [{name: name, type: text}]\n", servertest.Options{})
	req, _ := http.NewRequest("POST", h.URL+"/v1/forms/f/submissions", strings.NewReader(`{"name":"Ann"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "k1")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("submit: %s", resp.Status)
	}
	for key, want := range map[string]string{"k1": "stored", "never-sent": "unknown"} {
		resp, err := http.Get(h.URL + "/f/f/done?key=" + key)
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(page), `data-status="`+want+`"`) {
			t.Errorf("result page of %s: %s, want status %s in\n%s", key, resp.Status, want, page)
		}
	}
}
