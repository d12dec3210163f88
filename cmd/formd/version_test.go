package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// formd version names the release and each part's schema; it reads the
// data without writing it, and creates nothing where there is none.
func TestVersionNamesTheSchemas(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data")
	var out, errb bytes.Buffer
	if code := run([]string{"version", "--data", dir}, &out, &errb); code != 0 {
		t.Fatalf("version on no data: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"formd ", "commit ", "journal " + filepath.Join(dir, "journal.db") + ": no data yet", "store   " + filepath.Join(dir, "store.db") + ": no data yet"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output does not say %q:\n%s", want, out.String())
		}
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("version created the data directory (%v)", err)
	}
	// Data this binary wrote: its schema, written by this release.
	if code := run([]string{"forms", "apply", "--data", dir, "-f", "../../examples/forms.yaml"}, &out, &errb); code != 0 {
		t.Fatalf("forms apply: exit %d: %s", code, errb.String())
	}
	out.Reset()
	if code := run([]string{"version", "--data", dir}, &out, &errb); code != 0 {
		t.Fatalf("version: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "store   "+filepath.Join(dir, "store.db")+": schema ") || !strings.Contains(out.String(), "last written by formd ") {
		t.Errorf("output does not give the store's schema and writer:\n%s", out.String())
	}
}

// A build without a VCS stamp (-buildvcs=false, a worktree, go install
// of a copied tree) names the commit it was stamped with, as the release
// and image scripts stamp it (issue 34: it said "commit unknown").
func TestVersionNamesAStampedCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds formd")
	}
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "formd")
	build := exec.Command("go", "build", "-buildvcs=false", "-ldflags", "-X github.com/formd/formd/internal/release.commit=0123456789ab", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.Command(bin, "version", "--data", filepath.Join(t.TempDir(), "none")).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "commit 0123456789ab\n") {
		t.Fatalf("formd version: %v\n%s", err, out)
	}
	for _, script := range []string{"../../scripts/release.sh", "../../scripts/image.sh"} {
		b, err := os.ReadFile(script)
		if err != nil || !strings.Contains(string(b), "-X github.com/formd/formd/internal/release.commit=$commit") {
			t.Errorf("%s does not stamp the commit (%v)", script, err)
		}
	}
}
