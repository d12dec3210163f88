package console

import (
	"testing"
	"time"
)

// TestTimesCarryUTCAndTheirMoment: every time is a <time> element with
// its moment in datetime (for console.js to show in the browser's zone)
// and UTC, named, in its text and on hover.
func TestTimesCarryUTCAndTheirMoment(t *testing.T) {
	t.Parallel()
	at := time.Date(2027, 3, 1, 1, 5, 3, 0, time.FixedZone("CST", 8*3600))
	tests := []struct {
		f, want string
	}{
		{"s", `<time datetime="2027-02-28T17:05:03Z" data-fmt="s" title="2027-02-28 17:05:03 UTC">2027-02-28 17:05:03 UTC</time>`},
		{"m", `<time datetime="2027-02-28T17:05:03Z" data-fmt="m" title="2027-02-28 17:05:03 UTC">2027-02-28 17:05 UTC</time>`},
		{"t", `<time datetime="2027-02-28T17:05:03Z" data-fmt="t" title="2027-02-28 17:05:03 UTC">17:05</time>`},
	}
	for _, tc := range tests {
		if got := string(timeEl(at, tc.f)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.f, got, tc.want)
		}
	}
	if got := timeEl(time.Time{}, "s"); got != "—" {
		t.Errorf("zero time: %s", got)
	}
}
