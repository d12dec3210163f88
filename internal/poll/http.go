package poll

import (
	"errors"
	"net/http"
	"testing"
	"time"
)

// UntilOK waits for a server to come up: it GETs url until the answer is
// 200 OK, and on timeout fails t with what and the last error or status.
func UntilOK(t testing.TB, what string, timeout time.Duration, url string) {
	t.Helper()
	UntilNil(t, what, timeout, func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}
