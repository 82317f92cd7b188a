package minioproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/flightns/flightns/internal/child"
	"github.com/flightns/flightns/internal/redisproc"
	"github.com/flightns/flightns/objstore"
)

// Version is the pinned MinIO release (a Go module version of
// github.com/minio/minio). The Makefile's MINIO_VERSION must equal it
// (TestTheMakefilePinsThisVersion).
const Version = "v0.0.0-20260212201848-7aac2a2c5b7c"

// The root credentials of every server this package starts. They open
// nothing but a loopback server that lives as long as its test.
const (
	AccessKey = "flightns-test"
	SecretKey = "flightns-test-secret"
	Region    = "us-east-1"
)

// BinaryEnv names the environment variable that points at the MinIO
// executable, overriding the search of bin/.
const BinaryEnv = "FLIGHTNS_MINIO"

// binaryName is the file `make minio` installs under bin/.
var binaryName = "minio-" + Version

// Binary returns the MinIO executable: $FLIGHTNS_MINIO, else
// bin/minio-<Version> in the first directory at or above the working
// directory that has one. The error says how to install it.
func Binary() (string, error) {
	if p := os.Getenv(BinaryEnv); p != "" {
		if err := executable(p); err != nil {
			return "", fmt.Errorf("minioproc: $%s=%s: %w", BinaryEnv, p, err)
		}
		return p, nil
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		p := filepath.Join(d, "bin", binaryName)
		if executable(p) == nil {
			return p, nil
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return "", fmt.Errorf("minioproc: the MinIO server (%s) is not installed: run `make minio` in the flightns repository "+
		"(go install github.com/minio/minio@%s into bin/), or set $%s to a minio executable", binaryName, Version, BinaryEnv)
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if st.IsDir() || st.Mode()&0o111 == 0 {
		return errors.New("not an executable file")
	}
	return nil
}

// Config describes a server.
type Config struct {
	// Dir holds the server's data. Required; it is the caller's to remove.
	Dir string
	// Buckets are created before Start returns.
	Buckets []string
	// Binary is the executable; "" is Binary().
	Binary string
	// StartTimeout bounds the wait for the server to answer; 0 means 30s.
	StartTimeout time.Duration
}

// Server is a running MinIO child process.
type Server struct {
	// URL is the server's endpoint, http://127.0.0.1:port.
	URL string

	cfg    Config
	mu     sync.Mutex
	cmd    *exec.Cmd
	done   <-chan struct{}
	output *bytes.Buffer
	client *s3.Client
}

// Start starts a server on a free loopback port, waits until it answers
// and creates cfg.Buckets.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.Dir == "" {
		return nil, errors.New("minioproc: Config.Dir is required")
	}
	if cfg.Binary == "" {
		bin, err := Binary()
		if err != nil {
			return nil, err
		}
		cfg.Binary = bin
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	var err error
	for range 5 {
		var s *Server
		if s, err = start(ctx, cfg); err == nil {
			for _, b := range cfg.Buckets {
				if err := s.CreateBucket(ctx, b); err != nil {
					_ = s.Stop()
					return nil, err
				}
			}
			return s, nil
		}
		if !errors.Is(err, errExited) {
			return nil, err
		}
	}
	return nil, err
}

var errExited = errors.New("minioproc: the server exited while starting")

// start launches one process on a port that was free a moment ago; a
// process that exits at once (the port was taken since) is errExited.
func start(ctx context.Context, cfg Config) (*Server, error) {
	port, err := redisproc.FreePort(false)
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(cfg.Binary, "server", cfg.Dir, "--address", addr, "--quiet", "--anonymous")
	cmd.Env = append(os.Environ(),
		"MINIO_ROOT_USER="+AccessKey, "MINIO_ROOT_PASSWORD="+SecretKey,
		"MINIO_BROWSER=off", "MINIO_UPDATE=off", "MINIO_CALLHOME_ENABLE=off")
	out := &bytes.Buffer{}
	cmd.Stdout, cmd.Stderr = out, out
	done, err := child.Start(cmd)
	if err != nil {
		return nil, fmt.Errorf("minioproc: starting %s: %w", cfg.Binary, err)
	}
	s := &Server{URL: "http://" + addr, cfg: cfg, cmd: cmd, done: done, output: out}
	s.client = s3.New(s3.Options{
		Region: Region, BaseEndpoint: aws.String(s.URL), UsePathStyle: true,
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, ""),
	})
	deadline := time.Now().Add(cfg.StartTimeout)
	hc := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-done:
			return nil, fmt.Errorf("%w: %s", errExited, out.String())
		default:
		}
		if resp, err := hc.Get(s.URL + "/minio/health/ready"); err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK && s.iamReady(ctx) {
				return s, nil
			}
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = s.Stop()
			return nil, fmt.Errorf("minioproc: the server at %s did not become ready within %s: %s", s.URL, cfg.StartTimeout, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// iamReady reports whether the server's identity subsystem answers: MinIO
// reports itself ready before it, and STS (credential vending) answers
// "Server not initialized" until it is.
func (s *Server) iamReady(ctx context.Context) bool {
	c := sts.New(sts.Options{Region: Region, BaseEndpoint: aws.String(s.URL),
		Credentials: credentials.NewStaticCredentialsProvider(AccessKey, SecretKey, "")})
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	_, err := c.AssumeRole(ctx, &sts.AssumeRoleInput{RoleArn: aws.String("arn:aws:iam::000000000000:role/probe"),
		RoleSessionName: aws.String("probe"), DurationSeconds: aws.Int32(900)})
	return err == nil || !strings.Contains(err.Error(), "not initialized")
}

// Client is an S3 client of the server with its root credentials.
func (s *Server) Client() *s3.Client { return s.client }

// CreateBucket creates a bucket.
func (s *Server) CreateBucket(ctx context.Context, name string) error {
	if _, err := s.client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
		return fmt.Errorf("minioproc: creating bucket %q: %w", name, err)
	}
	return nil
}

// URI is the flightns root URI of bucket (and optional prefix) on this
// server.
func (s *Server) URI(bucket, prefix string) string { return objstore.S3URI(s.URL, bucket, prefix) }

// Env is the environment an S3 client of this server needs: the root
// credentials, and no instance metadata lookups. The endpoint and the
// region travel in the URI (flightns) or the storage options (Lance).
func Env() map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID":         AccessKey,
		"AWS_SECRET_ACCESS_KEY":     SecretKey,
		"AWS_EC2_METADATA_DISABLED": "true",
	}
}

// Pid is the server's process id.
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd.Process.Pid
}

// Stop kills the server and waits for it to exit. Its data directory
// stays.
func (s *Server) Stop() error {
	s.mu.Lock()
	cmd, done := s.cmd, s.done
	s.mu.Unlock()
	select {
	case <-done:
		return nil
	default:
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("minioproc: the server (pid %d) did not exit", cmd.Process.Pid)
	}
}
