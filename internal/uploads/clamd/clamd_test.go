package clamd_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/formd/formd/internal/uploads/clamd"
	"github.com/formd/formd/internal/uploads/clamd/clamdtest"
)

func TestParse(t *testing.T) {
	t.Parallel()
	for v, want := range map[string]string{
		"unix:///run/clamav/clamd.ctl": "unix:///run/clamav/clamd.ctl",
		"tcp://127.0.0.1:3310":         "tcp://127.0.0.1:3310",
	} {
		c, err := clamd.Parse(v)
		if err != nil || c.String() != want {
			t.Errorf("Parse(%q) = %v, %v", v, c, err)
		}
	}
	for _, v := range []string{"", "/run/clamav/clamd.ctl", "unix://run/clamd.ctl", "tcp://127.0.0.1", "http://x:1", "tcp://h:1/x"} {
		if _, err := clamd.Parse(v); err == nil {
			t.Errorf("Parse(%q) accepted", v)
		}
	}
}

// A real clamd reports the EICAR file and passes clean bytes, also over
// several INSTREAM chunks.
func TestFindsEICAR(t *testing.T) {
	t.Parallel()
	c := clamdtest.Running(t)
	found, err := c.Scan(context.Background(), bytes.NewReader(clamdtest.EICAR))
	if err != nil || !strings.Contains(found, "EICAR") && !strings.Contains(found, "Eicar") {
		t.Fatalf("clamd on EICAR: %q %v", found, err)
	}
	if found, err := c.Scan(context.Background(), strings.NewReader("hello, a clean file\n")); err != nil || found != "" {
		t.Fatalf("clamd on a clean file: %q %v", found, err)
	}
	// A stream of several INSTREAM chunks.
	big := bytes.Repeat([]byte("clean bytes "), 3*(64<<10)/12+5) // more than three 64 KiB chunks
	if found, err := c.Scan(context.Background(), bytes.NewReader(big)); err != nil || found != "" {
		t.Fatalf("clamd on a long clean stream: %q %v", found, err)
	}
}
