package powercut

import (
	"os"
	"path/filepath"
	"testing"
)

// EnvRequire, set to 1 (as .ci/run does), makes a machine without FUSE
// fail the tests that need it rather than skip them.
const EnvRequire = "FORMD_REQUIRE_SERVICES"

// MountTest mounts a fresh filesystem under a temporary directory of t
// and unmounts it (without a cut) when t ends. It skips t when FUSE is
// not available (no /dev/fuse, not root, mount refused), unless
// FORMD_REQUIRE_SERVICES=1, when it fails instead.
func MountTest(t testing.TB) *FS {
	t.Helper()
	base := t.TempDir()
	mnt := filepath.Join(base, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := Mount(filepath.Join(base, "state"), mnt)
	if err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s=1 and FUSE is not available: %v (the power-cut tests need /dev/fuse and root)", EnvRequire, err)
		}
		t.Skipf("FUSE is not available (%v): the power-cut tests need /dev/fuse and root", err)
	}
	Cleanup(t, f)
	return f
}

// Cleanup unmounts f, if it is mounted, when t ends (before t's
// temporary directories go).
func Cleanup(t testing.TB, f *FS) {
	t.Cleanup(func() {
		if err := f.Unmount(); err != nil {
			t.Errorf("unmount %s: %v", f.mnt, err)
		}
	})
}
