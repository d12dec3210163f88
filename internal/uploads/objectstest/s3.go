package objectstest

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"strings"
	"testing"

	"github.com/formd/formd/internal/uploads/s3objects"
)

// S3URL is FORMD_TEST_S3_URL (a real S3-compatible server, such as the
// SeaweedFS that scripts/s3server.sh starts; credentials in
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY) with a prefix of the
// test's own in its bucket. The test is skipped without it, failed
// under FORMD_REQUIRE_SERVICES=1.
func S3URL(t *testing.T) string {
	t.Helper()
	raw := os.Getenv("FORMD_TEST_S3_URL")
	if raw == "" {
		if os.Getenv("FORMD_REQUIRE_SERVICES") == "1" {
			t.Fatal("FORMD_TEST_S3_URL is not set (FORMD_REQUIRE_SERVICES=1): start scripts/s3server.sh")
		}
		t.Skip("FORMD_TEST_S3_URL is not set")
	}
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	var b [6]byte
	rand.Read(b[:])
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + strings.ReplaceAll(t.Name(), "/", "-") + "-" + hex.EncodeToString(b[:])
	return u.String()
}

// S3Location is S3URL as --uploads reads it.
func S3Location(t *testing.T) s3objects.Location {
	t.Helper()
	loc, err := s3objects.ParseURL(S3URL(t))
	if err != nil {
		t.Fatal(err)
	}
	return loc
}
