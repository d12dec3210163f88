package s3objects_test

import (
	"context"
	"testing"

	"github.com/formd/formd/internal/uploads/objectstest"
	"github.com/formd/formd/internal/uploads/s3objects"
	"github.com/formd/formd/internal/uploads/tier"
	"go.uber.org/goleak"
)

// The clients of the bucket leave no connection behind.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestParseS3URL(t *testing.T) {
	t.Parallel()
	good := map[string]s3objects.Location{
		"s3://files":                            {Bucket: "files", Endpoint: "s3.amazonaws.com", Secure: true},
		"s3://files/formd/?region=eu-west-1":    {Bucket: "files", Prefix: "formd/", Endpoint: "s3.amazonaws.com", Secure: true, Region: "eu-west-1"},
		"s3://b?endpoint=http://127.0.0.1:8333": {Bucket: "b", Endpoint: "127.0.0.1:8333", PathStyle: true},
		"s3://b?endpoint=https://oss-cn-hangzhou.aliyuncs.com&style=virtual": {Bucket: "b", Endpoint: "oss-cn-hangzhou.aliyuncs.com", Secure: true},
	}
	for in, want := range good {
		got, err := s3objects.ParseURL(in)
		if err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", in, got, err, want)
		}
	}
	for _, bad := range []string{"files", "http://b", "s3://", "s3://key:secret@b", "s3://b?endpoint=127.0.0.1:8333",
		"s3://b?endpoint=ftp://h", "s3://b?style=odd", "s3://b?access_key=x", "s3://b?endpoint=http://h/path"} {
		if _, err := s3objects.ParseURL(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// A bucket passes the objects' conformance suite (skipped without
// FORMD_TEST_S3_URL, as the other S3 tests are); its two instances are
// two clients of one bucket and prefix, as two servers are.
func TestS3Conformance(t *testing.T) {
	t.Parallel()
	objectstest.Run(t, objectstest.Tier{
		Open: func(t *testing.T) (objectstest.Objects, objectstest.Objects) {
			loc := objectstest.S3Location(t)
			a, err := s3objects.New(context.Background(), loc)
			if err != nil {
				t.Fatal(err)
			}
			b, err := s3objects.New(context.Background(), loc)
			if err != nil {
				t.Fatal(err)
			}
			// Their idle keep-alive connections would outlive the test
			// (goleak in TestMain).
			t.Cleanup(a.CloseIdleConnections)
			t.Cleanup(b.CloseIdleConnections)
			return a, b
		},
		NotFound: tier.ErrNoObject,
	})
}
