package server

import (
	"strings"
	"testing"

	"github.com/formd/formd/internal/config"
	"github.com/formd/formd/internal/uploads/s3objects"
)

// Several instances on one store with uploads in their own data
// directories are warned at start-up (issue 34); one instance on the
// embedded store, or a shared bucket, is not.
func TestLocalUploadsWarning(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		cfg  config.Config
		warn bool
	}{
		{"embedded sqlite store", config.Config{Store: "sqlite"}, false},
		{"postgres, uploads in --data", config.Config{Store: "postgres://db/formd"}, true},
		{"postgres, uploads in a bucket", config.Config{Store: "postgres://db/formd", UploadsS3: &s3objects.Location{}}, false},
	}
	for _, tc := range tests {
		if got := localUploadsWarning(tc.cfg); (got != "") != tc.warn || (tc.warn && !strings.Contains(got, "--uploads s3://")) {
			t.Errorf("%s: %q", tc.name, got)
		}
	}
}
