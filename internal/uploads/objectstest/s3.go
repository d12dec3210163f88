package objectstest

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/formd/formd/internal/uploads/s3objects"
)

// S3Location is the test's own prefix in the bucket of
// FORMD_TEST_S3_URL (a real S3-compatible server, such as the SeaweedFS
// that scripts/s3server.sh starts; credentials in AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY). The test is skipped without it, failed under
// FORMD_REQUIRE_SERVICES=1.
func S3Location(t *testing.T) s3objects.Location {
	t.Helper()
	raw := os.Getenv("FORMD_TEST_S3_URL")
	if raw == "" {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_TEST_S3_URL is not set (FORMD_REQUIRE_SERVICES=1): start scripts/s3server.sh")
		}
		t.Skip("FORMD_TEST_S3_URL is not set")
	}
	loc, err := s3objects.ParseURL(raw)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	rand.Read(b[:])
	loc.Prefix += strings.ReplaceAll(t.Name(), "/", "-") + "-" + hex.EncodeToString(b[:]) + "/"
	return loc
}
