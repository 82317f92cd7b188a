package minioproc

import (
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// The Makefile installs exactly the version this package looks for.
func TestTheMakefilePinsThisVersion(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^MINIO_VERSION\s*:?=\s*(\S+)`).FindSubmatch(mk)
	if m == nil || string(m[1]) != Version {
		t.Fatalf("the Makefile's MINIO_VERSION is %q, minioproc.Version is %q", m, Version)
	}
}

// A server starts on loopback with its buckets, honours create-only PUTs
// (one winner, the loser gets 412 and the first bytes stay), and is gone
// after Stop.
func TestAServerStartsServesCreateOnlyPutsAndStops(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Config{Dir: t.TempDir(), Buckets: []string{"one", "two"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	if !strings.HasPrefix(s.URL, "http://127.0.0.1:") {
		t.Fatalf("URL %s is not on loopback", s.URL)
	}
	c := s.Client()
	put := func(body string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("two"), Key: aws.String("k"),
			Body: strings.NewReader(body), IfNoneMatch: aws.String("*")})
		return err
	}
	if err := put("first"); err != nil {
		t.Fatal(err)
	}
	var ae smithy.APIError
	if err := put("second"); !errors.As(err, &ae) || ae.ErrorCode() != "PreconditionFailed" {
		t.Fatalf("second create-only PUT: %v", err)
	}
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("one")}); err != nil {
		t.Fatalf("bucket one: %v", err)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	once := func(o *s3.Options) { o.RetryMaxAttempts = 1 }
	if _, err := c.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: aws.String("one")}, once); err == nil {
		t.Fatal("the server still answers after Stop")
	}
}

// Without the binary the error says how to install it.
func TestAMissingBinaryIsNamedWithItsInstall(t *testing.T) {
	t.Setenv(BinaryEnv, "/nonexistent/minio")
	_, err := Start(context.Background(), Config{Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), BinaryEnv) {
		t.Fatalf("err = %v", err)
	}
	t.Setenv(BinaryEnv, "")
	t.Chdir(t.TempDir())
	if _, err := Binary(); err == nil || !strings.Contains(err.Error(), "make minio") {
		t.Fatalf("err = %v", err)
	}
}

// What flightns knows of this MinIO and does not use: it ignores
// If-None-Match on CopyObject (the destination is overwritten), so a
// server-side copy can never be a create-only promotion here, and
// flightns promotes a staged manifest with a GET and a conditional PUT.
// A DELETE of a missing key succeeds, and DeleteObjects takes missing
// keys without an error (objstore's Delete and DeleteMany rely on it). If
// a MinIO upgrade changes an answer, this test says so.
func TestWhatThisMinIOAnswersToConditionalCopiesAndDeletes(t *testing.T) {
	ctx := context.Background()
	s, err := Start(ctx, Config{Dir: t.TempDir(), Buckets: []string{"probe"}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = s.Stop() }()
	c := s.Client()
	for k, v := range map[string]string{"src": "staged", "dst": "final"} {
		if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("probe"), Key: aws.String(k), Body: strings.NewReader(v)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("probe"), Key: aws.String("dst"),
		CopySource: aws.String("probe/src"), IfNoneMatch: aws.String("*")}); err != nil {
		t.Fatalf("a conditional copy onto an existing key: %v (MinIO now refuses it: a create-only copy may be possible)", err)
	}
	o, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("probe"), Key: aws.String("dst")})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(o.Body)
	_ = o.Body.Close()
	if string(got) != "staged" {
		t.Fatalf("after a conditional copy onto an existing key it holds %q", got)
	}
	if _, err := c.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("probe"), Key: aws.String("missing")}); err != nil {
		t.Fatalf("DELETE of a missing key: %v", err)
	}
	out, err := c.DeleteObjects(ctx, &s3.DeleteObjectsInput{Bucket: aws.String("probe"), Delete: &types.Delete{
		Objects: []types.ObjectIdentifier{{Key: aws.String("src")}, {Key: aws.String("missing")}}, Quiet: aws.Bool(true)}})
	if err != nil || len(out.Errors) != 0 {
		t.Fatalf("DeleteObjects of a present and a missing key: %v %+v", err, out)
	}
}
