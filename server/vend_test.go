package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go"

	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/testutil/s3test"
	"github.com/flightns/flightns/server"
)

// restJSON posts body to srv's REST path with creds and decodes the
// answer into out, failing the test unless it is 200.
func restJSON(t *testing.T, srv *server.Server, path, body string, creds func(*http.Request), out any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+srv.RESTAddr().String()+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	creds(req)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	raw, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", path, resp.StatusCode, raw)
	}
	if err := json.Unmarshal(raw, out); err != nil {
		t.Fatal(err)
	}
}

type described struct {
	Location       string            `json:"location"`
	StorageOptions map[string]string `json:"storage_options"`
}

// With --vend-credentials a table's description carries temporary
// credentials from STS that reach that table's directory alone (read-only
// for a reader), with their expiry; with them MinIO itself refuses
// another table's objects and a reader's writes. Without vending nothing
// secret is answered.
func TestVendedCredentialsReachOneTableAlone(t *testing.T) {
	ctx := context.Background()
	minio := s3test.Start(t, "cat")
	dir := t.TempDir()
	cfg := config(t, t.TempDir())
	cfg.Store.Root = minio.URI("cat", "root")
	cfg.Vend = server.Vend{Enabled: true, Duration: 15 * time.Minute}
	cfg.AuthFile = writeFile(t, dir, "auth.json", []byte(`{"users": [{"name": "ana", "password": "pw-ana", "role": "write"}],
		"tokens": [{"token": "reader-token", "name": "rita", "role": "read"}]}`))
	srv, err := server.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Close() }()
	ana := func(r *http.Request) { r.SetBasicAuth("ana", "pw-ana") }
	restJSON(t, srv, "/v1/namespace/sales/create", `{}`, ana, &map[string]any{})
	var a, b described
	restJSON(t, srv, "/v1/table/sales%24a/declare", `{"vend_credentials": true}`, ana, &a)
	restJSON(t, srv, "/v1/table/sales%24b/declare", `{}`, ana, &b)
	start := time.Now()
	var asReader, asWriter described
	restJSON(t, srv, "/v1/table/sales%24a/describe", `{"vend_credentials": true}`, bearer("reader-token"), &asReader)
	restJSON(t, srv, "/v1/table/sales%24a/describe", `{}`, ana, &asWriter)
	for what, d := range map[string]described{"declare": a, "describe as a reader": asReader, "describe as a writer": asWriter} {
		o := d.StorageOptions
		if o["aws_access_key_id"] == "" || o["aws_session_token"] == "" || o["aws_access_key_id"] == minioproc.AccessKey {
			t.Fatalf("%s: storage options %v hold no temporary credentials", what, o)
		}
		ms, _ := strconv.ParseInt(o["expires_at_millis"], 10, 64)
		if exp := time.UnixMilli(ms); exp.Before(start.Add(10*time.Minute)) || exp.After(start.Add(20*time.Minute)) {
			t.Fatalf("%s: expires at %v, want about 15 min from now", what, exp)
		}
		if o["aws_endpoint"] != minio.URL {
			t.Fatalf("%s: endpoint %q, want %q", what, o["aws_endpoint"], minio.URL)
		}
	}
	// Described again while young, the table costs STS nothing: the same
	// credentials come back.
	var again described
	restJSON(t, srv, "/v1/table/sales%24a/describe", `{}`, ana, &again)
	if again.StorageOptions["aws_access_key_id"] != asWriter.StorageOptions["aws_access_key_id"] {
		t.Errorf("a second describe vended new credentials instead of the young ones")
	}
	var opts described
	restJSON(t, srv, "/v1/table/sales%24a/describe", `{"vend_credentials": false}`, ana, &opts)
	if _, ok := opts.StorageOptions["aws_secret_access_key"]; ok {
		t.Fatalf("vend_credentials false answered credentials: %v", opts.StorageOptions)
	}

	// Objects of both tables, written with the server's own credentials.
	key := func(d described, name string) string {
		return strings.TrimPrefix(d.Location, "s3://cat/") + "/data/" + name
	}
	for _, d := range []described{a, b} {
		if _, err := minio.Client().PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cat"), Key: aws.String(key(d, "x.lance")), Body: bytes.NewReader([]byte("x"))}); err != nil {
			t.Fatal(err)
		}
	}
	client := func(o map[string]string) *s3.Client {
		return s3.New(s3.Options{Region: minioproc.Region, BaseEndpoint: aws.String(minio.URL), UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(o["aws_access_key_id"], o["aws_secret_access_key"], o["aws_session_token"])})
	}
	get := func(c *s3.Client, k string) error {
		out, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("cat"), Key: aws.String(k)})
		if err == nil {
			_ = out.Body.Close()
		}
		return err
	}
	put := func(c *s3.Client, k string) error {
		_, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("cat"), Key: aws.String(k), Body: bytes.NewReader([]byte("y"))})
		return err
	}
	denied := func(what string, err error) {
		t.Helper()
		var ae smithy.APIError
		if !errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied" {
			t.Errorf("%s: %v, want AccessDenied from the store", what, err)
		}
	}
	reader, writer := client(asReader.StorageOptions), client(asWriter.StorageOptions)
	if err := get(reader, key(a, "x.lance")); err != nil {
		t.Errorf("a reader reads its table: %v", err)
	}
	if _, err := reader.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("cat"), Prefix: aws.String(strings.TrimPrefix(a.Location, "s3://cat/") + "/")}); err != nil {
		t.Errorf("a reader lists its table: %v", err)
	}
	denied("a reader writes its table", put(reader, key(a, "y.lance")))
	denied("a reader reads another table", get(reader, key(b, "x.lance")))
	denied("a reader lists the root", func() error {
		_, err := reader.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("cat"), Prefix: aws.String("root/")})
		return err
	}())
	if err := put(writer, key(a, "y.lance")); err != nil {
		t.Errorf("a writer writes its table: %v", err)
	}
	denied("a writer writes another table", put(writer, key(b, "y.lance")))
	denied("a writer reads __manifest", get(writer, "root/__manifest/_auth/session.key"))
}
