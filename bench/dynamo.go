package bench

// Lance's own DynamoDB commit store, a peer of flightns in lance-s3.
//
// LanceDB opened on an s3+ddb://bucket/prefix?ddbTableName=T URI writes
// its tables to S3 and commits each version through a DynamoDB table T
// (Lance's external manifest store: a conditional PutItem claims the
// version, then the manifest is copied to its final name and the item
// updated). The benchmark runs dynalite (npm, a DynamoDB emulator in
// Node, pinned in interop/lancedb) as a process of its own, in memory,
// and puts a dynamoProxy in front of it that logs every request by its
// operation, with when it arrived and when it was answered, and delays
// each by the same latency as the S3 proxy. The log is read like the S3
// proxy's: requests per add, and the longest chain of requests (S3 and
// DynamoDB together) that one add waited for one after another.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/flightns/flightns/internal/child"
	"github.com/flightns/flightns/internal/minioproc"
	"github.com/flightns/flightns/internal/s3proxy"
)

// dynaliteVersion is the dynalite interop/lancedb/package.json pins.
const dynaliteVersion = "4.0.0"

// lanceDynamoTable is the DynamoDB table of Lance's commit store in
// lance-s3. Every round shares it: Lance keys its items by the table's
// location (base_uri), and each round writes under a prefix of its own.
const lanceDynamoTable = "lance_commits"

// dynaliteScript serves dynalite in memory on a free loopback port and
// prints the port. Tables are ACTIVE as soon as they are created.
const dynaliteScript = `const server = require("dynalite")({ createTableMs: 0, deleteTableMs: 0, updateTableMs: 0 });
server.listen(0, "127.0.0.1", () => console.log(server.address().port));`

// dynalite is a running dynalite server, its own Node process.
type dynalite struct {
	URL    string // http://127.0.0.1:port
	cmd    *exec.Cmd
	done   <-chan struct{}
	stderr *bytes.Buffer // read only once done is closed
}

// startDynalite starts the dynalite installed in dir's node_modules
// (interop/lancedb, `make lancedb`) and waits until it listens. A missing
// or different dynalite is an error: lance-s3 never runs without its
// DynamoDB peer.
func startDynalite(ctx context.Context, dir string) (*dynalite, error) {
	if err := checkDynalite(dir); err != nil {
		return nil, err
	}
	out, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("dynalite: %w", err)
	}
	cmd := exec.CommandContext(ctx, "node", "-e", dynaliteScript)
	cmd.Dir = dir
	d := &dynalite{cmd: cmd, stderr: &bytes.Buffer{}}
	cmd.Stdout, cmd.Stderr = w, d.stderr
	d.done, err = child.Start(cmd)
	_ = w.Close() // the child has its own copy
	if err != nil {
		_ = out.Close()
		return nil, fmt.Errorf("starting dynalite: %w", err)
	}
	port, err := readPort(out, 30*time.Second)
	if err != nil {
		d.stop()
		return nil, fmt.Errorf("dynalite did not start: %w: %s", err, strings.TrimSpace(d.stderr.String()))
	}
	d.URL = "http://127.0.0.1:" + port
	return d, nil
}

// checkDynalite says whether dir's node_modules holds dynalite at
// dynaliteVersion, and how to install it when it does not.
func checkDynalite(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "node_modules", "dynalite", "package.json"))
	if err != nil {
		return fmt.Errorf("dynalite (DynamoDB for Lance's commit store) is not installed in %s: run `make lancedb`: %w", dir, err)
	}
	var pkg struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(b, &pkg); err != nil {
		return fmt.Errorf("reading dynalite's package.json in %s: %w", dir, err)
	}
	if pkg.Version != dynaliteVersion {
		return fmt.Errorf("dynalite %s is installed in %s, the benchmark pins %s: run `make lancedb`", pkg.Version, dir, dynaliteVersion)
	}
	return nil
}

// readPort reads the first line r gives within limit: the port a child
// printed once it listened. It drains r after that line, so the child
// never blocks on a full pipe, and closes r at its end.
func readPort(r io.ReadCloser, limit time.Duration) (string, error) {
	line := make(chan string, 1)
	go func() {
		defer func() { _ = r.Close() }()
		br := bufio.NewReader(r)
		l, _ := br.ReadString('\n')
		line <- strings.TrimSpace(l)
		_, _ = io.Copy(io.Discard, br)
	}()
	select {
	case l := <-line:
		if l == "" {
			return "", errors.New("it exited before it printed its port")
		}
		return l, nil
	case <-time.After(limit):
		return "", fmt.Errorf("no port printed within %s", limit)
	}
}

// stop kills dynalite (its data is in memory only) and waits for its
// exit.
func (d *dynalite) stop() {
	_ = d.cmd.Process.Kill()
	<-d.done
}

// dynamoRequest is one request the dynamoProxy answered.
type dynamoRequest struct {
	Op     string // the operation: "PutItem", from X-Amz-Target
	Status int
	// Start is when the request arrived, End when it was answered (the
	// injected latency included), as s3proxy.Request's.
	Start, End time.Time
}

// dynamoProxy is an HTTP reverse proxy in front of a DynamoDB endpoint
// that logs every request and delays each by the latency set.
type dynamoProxy struct {
	URL     string
	latency atomic.Int64 // a time.Duration
	log     struct {
		sync.Mutex
		reqs []dynamoRequest
	}
	srv *http.Server
}

// startDynamoProxy serves a dynamoProxy to target on a loopback port
// until close.
func startDynamoProxy(target string) (*dynamoProxy, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("dynamodb proxy target %q: %w", target, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("dynamodb proxy: %w", err)
	}
	p := &dynamoProxy{URL: "http://" + ln.Addr().String()}
	rp := httputil.NewSingleHostReverseProxy(u)
	p.srv = &http.Server{Handler: p.handler(rp), ReadHeaderTimeout: time.Minute}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// handler delays, passes on and logs one request.
func (p *dynamoProxy) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req := dynamoRequest{Op: dynamoOp(r.Header.Get("X-Amz-Target")), Start: time.Now()}
		if d := time.Duration(p.latency.Load()); d > 0 {
			time.Sleep(d)
		}
		sw := &s3proxy.StatusWriter{ResponseWriter: w}
		next.ServeHTTP(sw, r)
		req.Status, req.End = sw.Status, time.Now()
		p.log.Lock()
		p.log.reqs = append(p.log.reqs, req)
		p.log.Unlock()
	})
}

// dynamoOp is the operation an X-Amz-Target names
// ("DynamoDB_20120810.PutItem" → "PutItem").
func dynamoOp(target string) string {
	if target == "" {
		return "unknown"
	}
	return target[strings.LastIndexByte(target, '.')+1:]
}

// setLatency delays every request from now on by d.
func (p *dynamoProxy) setLatency(d time.Duration) { p.latency.Store(int64(d)) }

// reset forgets the requests logged so far.
func (p *dynamoProxy) reset() {
	p.log.Lock()
	p.log.reqs = nil
	p.log.Unlock()
}

// between is the requests that arrived in [from, to].
func (p *dynamoProxy) between(from, to time.Time) []dynamoRequest {
	p.log.Lock()
	defer p.log.Unlock()
	var out []dynamoRequest
	for _, r := range p.log.reqs {
		if !r.Start.Before(from) && !r.Start.After(to) {
			out = append(out, r)
		}
	}
	return out
}

// close stops the proxy.
func (p *dynamoProxy) close() { _ = p.srv.Close() }

// dynamoKind names a request in the breakdown: its operation, and its
// status when DynamoDB refused it (a lost conditional PutItem is 400).
func dynamoKind(r dynamoRequest) string {
	if r.Status == http.StatusOK {
		return r.Op
	}
	return fmt.Sprintf("%s (%d)", r.Op, r.Status)
}

// dynamoOpsWithin is the DynamoDB requests that ran within an add's span
// (fractional milliseconds since the epoch), as links of a chain beside
// the S3 requests.
func dynamoOpsWithin(reqs []dynamoRequest, span [2]float64) []s3Op {
	from := time.UnixMicro(int64(span[0] * 1000))
	to := time.UnixMicro(int64(span[1] * 1000))
	var out []s3Op
	for _, r := range reqs {
		if !r.Start.Before(from) && !r.End.After(to) {
			out = append(out, s3Op{path: "dynamodb:" + r.Op, start: r.Start, end: r.End})
		}
	}
	return out
}

// createLanceCommitTable creates the table Lance's DynamoDB commit store
// writes to (Lance creates none: HASH key base_uri, a string, and RANGE
// key version, a number) and waits until it is ACTIVE.
func createLanceCommitTable(ctx context.Context, endpoint, name string) error {
	in := map[string]any{
		"TableName": name,
		"AttributeDefinitions": []map[string]string{
			{"AttributeName": "base_uri", "AttributeType": "S"},
			{"AttributeName": "version", "AttributeType": "N"},
		},
		"KeySchema": []map[string]string{
			{"AttributeName": "base_uri", "KeyType": "HASH"},
			{"AttributeName": "version", "KeyType": "RANGE"},
		},
		"BillingMode": "PAY_PER_REQUEST",
	}
	if err := dynamoCall(ctx, endpoint, "CreateTable", in, nil); err != nil {
		return err
	}
	for start := time.Now(); ; {
		var out struct {
			Table struct{ TableStatus string }
		}
		if err := dynamoCall(ctx, endpoint, "DescribeTable", map[string]string{"TableName": name}, &out); err != nil {
			return err
		}
		if out.Table.TableStatus == "ACTIVE" {
			return nil
		}
		if time.Since(start) > 30*time.Second {
			return fmt.Errorf("dynamodb table %s is %s after 30 s, not ACTIVE", name, out.Table.TableStatus)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// dynamoCall sends one DynamoDB request (op: "CreateTable", …) with the
// JSON body in to endpoint and decodes the reply into out (nil: ignored).
// The Authorization header has the AWS4 form and signs nothing: dynalite
// checks the form, never the signature.
func dynamoCall(ctx context.Context, endpoint, op string, in, out any) error {
	body, err := json.Marshal(in)
	if err != nil {
		return fmt.Errorf("dynamodb %s: %w", op, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint+"/", bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("dynamodb %s: %w", op, err)
	}
	now := time.Now().UTC()
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("X-Amz-Date", now.Format("20060102T150405Z"))
	req.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s/%s/dynamodb/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=%s",
		minioproc.AccessKey, now.Format("20060102"), minioproc.Region, strings.Repeat("0", 64)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("dynamodb %s: %w", op, err)
	}
	defer func() { _ = resp.Body.Close() }()
	reply, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("dynamodb %s: reading the reply: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("dynamodb %s: %s: %s", op, resp.Status, reply)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(reply, out); err != nil {
		return fmt.Errorf("dynamodb %s: decoding %s: %w", op, reply, err)
	}
	return nil
}

// lanceDynamo is the DynamoDB side of lance-s3: dynalite, the proxy in
// front of it, and the commit table, ready.
type lanceDynamo struct {
	server *dynalite
	proxy  *dynamoProxy
}

// startLanceDynamo starts dynalite from dir, a dynamoProxy in front of
// it, and creates lanceDynamoTable (directly, not through the proxy, so
// the log holds only what Lance sends).
func startLanceDynamo(ctx context.Context, dir string) (*lanceDynamo, error) {
	server, err := startDynalite(ctx, dir)
	if err != nil {
		return nil, err
	}
	if err := createLanceCommitTable(ctx, server.URL, lanceDynamoTable); err != nil {
		server.stop()
		return nil, fmt.Errorf("creating Lance's DynamoDB commit table: %w", err)
	}
	proxy, err := startDynamoProxy(server.URL)
	if err != nil {
		server.stop()
		return nil, err
	}
	return &lanceDynamo{server: server, proxy: proxy}, nil
}

// stop stops the proxy, then dynalite.
func (l *lanceDynamo) stop() {
	l.proxy.close()
	l.server.stop()
}

// uri is the s3+ddb:// URI of a LanceDB database under prefix of bucket
// that commits through lanceDynamoTable.
func (l *lanceDynamo) uri(bucket, prefix string) string {
	return fmt.Sprintf("s3+ddb://%s/%s?ddbTableName=%s", bucket, prefix, lanceDynamoTable)
}

// storageOptions are the options LanceDB needs on an s3+ddb:// URI: the
// S3 ones of lanceS3Options, and the DynamoDB endpoint (the proxy) with
// the same keys and region.
func (l *lanceDynamo) storageOptions(s3Endpoint string) map[string]string {
	o := lanceS3Options(s3Endpoint)
	o["dynamodb_endpoint"] = l.proxy.URL
	return o
}
