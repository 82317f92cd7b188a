package s3test

import (
	"fmt"
	"net/http/httptest"
	"testing"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Server is a running gofakes3 server.
type Server struct {
	URL     string // http://127.0.0.1:port
	Backend *s3mem.Backend
}

// Start serves a fresh in-memory S3 with the given buckets created, and
// stops it when the test ends.
func Start(tb testing.TB, buckets ...string) *Server {
	tb.Helper()
	backend := s3mem.New()
	for _, b := range buckets {
		if err := backend.CreateBucket(b); err != nil {
			tb.Fatalf("s3test: creating bucket %q: %v", b, err)
		}
	}
	faker := gofakes3.New(backend)
	srv := httptest.NewServer(faker.Server())
	tb.Cleanup(srv.Close)
	tb.Setenv("AWS_ACCESS_KEY_ID", "flightns-test")
	tb.Setenv("AWS_SECRET_ACCESS_KEY", "flightns-test")
	tb.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	return &Server{URL: srv.URL, Backend: backend}
}

// URI returns the s3:// URI of bucket (and optional prefix) on this server.
func (s *Server) URI(bucket, prefix string) string {
	p := ""
	if prefix != "" {
		p = "/" + prefix
	}
	return fmt.Sprintf("s3://%s%s?endpoint=%s&region=us-east-1&use_path_style=true&disable_https=true", bucket, p, s.URL)
}
