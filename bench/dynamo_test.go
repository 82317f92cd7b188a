package bench

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The DynamoDB side of lance-s3 against the real dynalite: the commit
// table exists with Lance's key schema, a conditional PutItem claims a
// version once and is refused the second time (what Lance's commit
// store relies on), and the proxy logs every request by operation and
// status, each delayed by the latency set. Stopping ends the process.
func TestDynamoProxyLogsAndDelaysEveryOperation(t *testing.T) {
	dir, err := lanceDir()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	l, err := startLanceDynamo(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	defer func() {
		if !stopped {
			l.stop()
		}
	}()

	var table struct {
		Table struct {
			TableStatus string
			KeySchema   []struct{ AttributeName, KeyType string }
		}
	}
	if err := dynamoCall(ctx, l.server.URL, "DescribeTable", map[string]string{"TableName": lanceDynamoTable}, &table); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprintf("%s %v", table.Table.TableStatus, table.Table.KeySchema); got != "ACTIVE [{base_uri HASH} {version RANGE}]" {
		t.Fatalf("commit table = %s, want ACTIVE with HASH base_uri and RANGE version", got)
	}

	const latency = 25 * time.Millisecond
	l.proxy.setLatency(latency)
	claim := map[string]any{
		"TableName":                lanceDynamoTable,
		"Item":                     map[string]any{"base_uri": map[string]string{"S": "t.lance"}, "version": map[string]string{"N": "1"}, "path": map[string]string{"S": "t.lance/_versions/1.manifest"}},
		"ConditionExpression":      "attribute_not_exists(#v)",
		"ExpressionAttributeNames": map[string]string{"#v": "version"},
	}
	if err := dynamoCall(ctx, l.proxy.URL, "PutItem", claim, nil); err != nil {
		t.Fatalf("first claim of version 1: %v", err)
	}
	if err := dynamoCall(ctx, l.proxy.URL, "PutItem", claim, nil); err == nil || !strings.Contains(err.Error(), "ConditionalCheckFailed") {
		t.Fatalf("second claim of version 1: %v, want ConditionalCheckFailedException", err)
	}
	var got struct {
		Item map[string]map[string]string
	}
	key := map[string]any{"TableName": lanceDynamoTable, "Key": map[string]any{"base_uri": map[string]string{"S": "t.lance"}, "version": map[string]string{"N": "1"}}}
	if err := dynamoCall(ctx, l.proxy.URL, "GetItem", key, &got); err != nil {
		t.Fatal(err)
	}
	if got.Item["path"]["S"] != "t.lance/_versions/1.manifest" {
		t.Errorf("GetItem = %+v, want the claimed item", got.Item)
	}

	reqs := l.proxy.between(time.Now().Add(-time.Minute), time.Now())
	want := []string{"PutItem", "PutItem (400)", "GetItem"}
	if len(reqs) != len(want) {
		t.Fatalf("proxy logged %+v, want %v", reqs, want)
	}
	for i, r := range reqs {
		if dynamoKind(r) != want[i] {
			t.Errorf("request %d is %q, want %q", i, dynamoKind(r), want[i])
		}
		if took := r.End.Sub(r.Start); took < latency {
			t.Errorf("request %d (%s) took %s, under the %s injected", i, r.Op, took, latency)
		}
	}
	l.proxy.reset()
	if reqs := l.proxy.between(time.Now().Add(-time.Minute), time.Now()); len(reqs) != 0 {
		t.Errorf("after reset the proxy still holds %+v", reqs)
	}

	l.stop()
	stopped = true
	select {
	case <-l.server.done:
	default:
		t.Fatal("dynalite still runs after stop")
	}
	if resp, err := http.Get(l.server.URL); err == nil {
		_ = resp.Body.Close()
		t.Error("dynalite still answers after stop")
	}
}

// A missing dynalite is an error that says how to install it, never a
// silent skip of the peer.
func TestDynamoPeerWithoutDynaliteIsAnError(t *testing.T) {
	_, err := startDynalite(context.Background(), t.TempDir())
	if err == nil || !strings.Contains(err.Error(), "make lancedb") {
		t.Fatalf("startDynalite without node_modules: %v, want an error naming `make lancedb`", err)
	}
}

// An add's chain of round trips runs through S3 and DynamoDB alike: S3,
// then DynamoDB, then S3 again is three in a row, and a request outside
// the add's span does not count.
func TestDynamoRequestsCountInAnAddsChain(t *testing.T) {
	t0 := time.UnixMilli(1_000_000)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	s3 := []s3Op{{path: "/b/t/data/x", start: at(0), end: at(10)}, {path: "/b/t/_versions/y", start: at(21), end: at(30)}}
	ddb := []dynamoRequest{
		{Op: "PutItem", Status: http.StatusOK, Start: at(11), End: at(20)},
		{Op: "PutItem", Status: http.StatusOK, Start: at(35), End: at(45)}, // after the add
	}
	span := [2]float64{float64(at(0).UnixMicro()) / 1000, float64(at(31).UnixMicro()) / 1000}
	within := dynamoOpsWithin(ddb, span)
	if len(within) != 1 || within[0].path != "dynamodb:PutItem" {
		t.Fatalf("within the add: %+v, want the first PutItem alone", within)
	}
	if n := longestChain(append(s3, within...)); n != 3 {
		t.Errorf("longest chain = %d, want 3 (S3, DynamoDB, S3)", n)
	}
	if n := longestChain(s3); n != 2 {
		t.Errorf("longest chain of S3 alone = %d, want 2", n)
	}
}

// lance-s3 at one process, one round, without latency, end to end
// (MinIO, dynalite, `flightns serve`, LanceDB): a row for each peer, every
// add committed; only Lance with DynamoDB sent DynamoDB requests, at
// least the two PutItems of each commit, and its round trips per add
// count them; the managed directory read and deleted a staging manifest
// per add (its commits went through CreateTableVersion); and flightns's
// row compares with both of Lance's commit services.
func TestLanceS3ScenarioReportsEveryPeer(t *testing.T) {
	servingFlightns(t)
	results := runScenario(t, Config{Scenarios: []string{"lance-s3"}, Processes: []int{1}, Rounds: 1, Backends: []string{"minio"}})
	got := byScenario(results)
	if len(results) != len(lanceS3Peers) || len(got) != len(lanceS3Peers) {
		t.Fatalf("%d results, want one per peer (%d): %+v", len(results), len(lanceS3Peers), results)
	}
	for _, p := range lanceS3Peers {
		r, ok := got[p.row]
		if !ok {
			t.Fatalf("no %s row", p.row)
		}
		if r.Backend != "minio" || r.Clients != 1 || r.Ops != lanceAdds || r.Errors != 0 || r.OpsPerSec <= 0 || r.S3PerOp <= 0 || r.S3Sequential <= 0 {
			t.Errorf("%s: backend %s, %d clients, %d adds, %d errors (%s), %.1f/s, %.2f S3 per add, %.0f sequential", p.row,
				r.Backend, r.Clients, r.Ops, r.Errors, r.FirstError, r.OpsPerSec, r.S3PerOp, r.S3Sequential)
		}
		if p.impl != "dir" && (r.Ceiling != "lance-s3:dir" || r.Ratio <= 0) {
			t.Errorf("%s: ceiling %q ratio %.2f, want a ratio to lance-s3:dir", p.row, r.Ceiling, r.Ratio)
		}
		if p.impl != "ddb" && r.DynamoPerOp != 0 {
			t.Errorf("%s: %.2f DynamoDB requests per add, want none", p.row, r.DynamoPerOp)
		}
	}
	alone, managed, ddb, fl := got["lance-s3:dir"], got["lance-s3:dir-managed"], got["lance-s3:ddb"], got["lance-s3:flightns"]
	if ddb.DynamoPerOp < 2 || !strings.Contains(ddb.Note, "PutItem") {
		t.Errorf("Lance with DynamoDB: %.2f DynamoDB requests per add, want ≥ 2 PutItem: %s", ddb.DynamoPerOp, ddb.Note)
	}
	if ddb.S3Sequential < alone.S3Sequential+2 {
		t.Errorf("Lance with DynamoDB waited for %.0f round trips per add, Lance alone %.0f: the two PutItems are not in its chain", ddb.S3Sequential, alone.S3Sequential)
	}
	if !strings.Contains(managed.Note, "GET staging") || !strings.Contains(managed.Note, "DELETE-BATCH") || managed.S3PerOp <= alone.S3PerOp {
		t.Errorf("the managed directory (%.2f S3 per add, Lance alone %.2f) did not commit through a staging manifest: %s", managed.S3PerOp, alone.S3PerOp, managed.Note)
	}
	// Every add is one CreateTableVersion to flightns, counted from the
	// server's own metrics, with the time it took there.
	m := regexp.MustCompile(`REST requests to flightns per commit: [0-9.]+ \([^)]*CreateTableVersion ([0-9.]+)[^)]*\), CreateTableVersion answered in ([0-9.]+) ms`).FindStringSubmatch(fl.Note)
	if m == nil || atof(m[1]) < 1 || atof(m[2]) <= 0 {
		t.Errorf("flightns: want its REST requests per add, with one CreateTableVersion or more, and their time: %s", fl.Note)
	}
	for _, peer := range []string{"lance-s3:dir-managed", "lance-s3:ddb"} {
		if fl.PeerRatios[peer] <= 0 || !strings.Contains(fl.Note, "×") {
			t.Errorf("flightns: ratio to %s = %.2f, want > 0: %s", peer, fl.PeerRatios[peer], fl.Note)
		}
	}
}

// LanceDB through flightns on a store that refuses a conditional copy
// onto an existing key (minio-copy+10ms): every add commits, flightns
// claims first — it reads no staging manifest, and its one read is the
// final manifest's, after the reply — and an add waits for one round
// trip more than Lance alone's, where on MinIO it waits for two.
func TestLanceS3ClaimsFirstOnAStoreThatCopies(t *testing.T) {
	servingFlightns(t)
	results := runScenario(t, Config{Scenarios: []string{"lance-s3"}, Processes: []int{1}, Rounds: 1, Backends: []string{"minio-copy+10ms"}})
	got := byScenario(results)
	alone, fl := got["lance-s3:dir"], got["lance-s3:flightns"]
	if fl.Backend != "minio-copy+10ms" || fl.Ops != lanceAdds || fl.Errors != 0 {
		t.Fatalf("flightns: backend %s, %d adds, %d errors (%s)", fl.Backend, fl.Ops, fl.Errors, fl.FirstError)
	}
	if strings.Contains(fl.Note, "flightns GET staging") || !strings.Contains(fl.Note, "flightns GET manifest") {
		t.Errorf("flightns read a staging manifest, or not its final one: %s", fl.Note)
	}
	if alone.S3Sequential <= 0 || fl.S3Sequential != alone.S3Sequential+1 {
		t.Errorf("round trips per add: flightns %.0f, Lance alone %.0f; want one more", fl.S3Sequential, alone.S3Sequential)
	}
}

// The lance scenario at one process, one round, on tmpfs: Lance's
// directory namespace with managed versioning is a row of its own beside
// Lance alone and flightns, every add committed, and flightns's row
// compares with it.
func TestLanceScenarioReportsTheManagedDirectory(t *testing.T) {
	results := runScenario(t, Config{Scenarios: []string{"lance"}, Processes: []int{1}, Rounds: 1, Backends: []string{"tmpfs"}})
	got := byScenario(results)
	for _, row := range []string{"lance:dir", "lance:dir-managed", "lance:flightns"} {
		r, ok := got[row]
		if !ok {
			t.Fatalf("no %s row in %+v", row, results)
		}
		if r.Backend != "tmpfs" || r.Clients != 1 || r.Ops != lanceAdds || r.Errors != 0 || r.OpsPerSec <= 0 {
			t.Errorf("%s: backend %s, %d clients, %d adds, %d errors (%s), %.1f/s", row, r.Backend, r.Clients, r.Ops, r.Errors, r.FirstError, r.OpsPerSec)
		}
	}
	if m := got["lance:dir-managed"]; m.Ceiling != "lance:dir" || m.Ratio <= 0 {
		t.Errorf("lance:dir-managed: ceiling %q ratio %.2f, want a ratio to lance:dir", m.Ceiling, m.Ratio)
	}
	if f := got["lance:flightns"]; f.PeerRatios["lance:dir-managed"] <= 0 {
		t.Errorf("lance:flightns: peer ratios %v, want one to lance:dir-managed", f.PeerRatios)
	}
}

// The rows of one lance-s3 level from made-up rounds: each peer's median
// round, the ratios to Lance alone and flightns's to both of Lance's
// commit services, the DynamoDB requests only where Lance sent them, the
// round trips only where they were measured, and the adds that failed
// in any round.
func TestLanceS3RowsCompareFlightnsWithEveryPeer(t *testing.T) {
	run := func(rate, p99 float64, s3, ddb map[string]int, seq float64, errs int64) lanceS3Run {
		first := ""
		if errs > 0 {
			first = "lost"
		}
		return lanceS3Run{res: Result{Clients: 1, Ops: 50, OpsPerSec: rate, P99Ms: p99, Errors: errs, FirstError: first},
			count: s3Count{commits: 50, byKind: s3, dynamo: ddb, sequential: seq}}
	}
	s3 := func(n int) map[string]int { return map[string]int{"lance PUT data": n} }
	runs := map[string][]lanceS3Run{
		"dir":         {run(90, 15, s3(200), nil, 4, 0), run(80, 16, s3(200), nil, 4, 0), run(100, 14, s3(200), nil, 4, 0)},
		"dir-managed": {run(45, 25, s3(550), nil, 11, 0), run(47, 25, s3(550), nil, 11, 0), run(40, 26, s3(550), nil, 11, 0)},
		"ddb":         {run(30, 30, s3(350), map[string]int{"PutItem": 100}, 9, 0), run(45, 30, s3(350), map[string]int{"PutItem": 100}, 9, 0), run(50, 30, s3(350), map[string]int{"PutItem": 100}, 9, 0)},
		"rest":        {run(54, 31, s3(300), nil, 6, 1), run(50, 31, s3(300), nil, 6, 0), run(60, 31, s3(300), nil, 6, 0)},
	}
	rows := lanceS3Rows(3, runs, "minio", true)
	if len(rows) != 4 {
		t.Fatalf("%d rows, want 4", len(rows))
	}
	byName := map[string]Result{}
	for _, r := range rows {
		byName[r.Scenario] = r
	}
	d, m, g, f := byName["lance-s3:dir"], byName["lance-s3:dir-managed"], byName["lance-s3:ddb"], byName["lance-s3:flightns"]
	if d.OpsPerSec != 90 || m.OpsPerSec != 45 || g.OpsPerSec != 45 || f.OpsPerSec != 54 {
		t.Errorf("medians: %v %v %v %v, want 90 45 45 54", d.OpsPerSec, m.OpsPerSec, g.OpsPerSec, f.OpsPerSec)
	}
	if f.Ceiling != "lance-s3:dir" || f.Ratio != 54.0/90 || f.PeerRatios["lance-s3:dir-managed"] != 54.0/45 || f.PeerRatios["lance-s3:ddb"] != 54.0/45 {
		t.Errorf("flightns: ceiling %q ratio %v peers %v", f.Ceiling, f.Ratio, f.PeerRatios)
	}
	if g.DynamoPerOp != 2 || g.S3PerOp != 7 || g.S3Sequential != 9 || d.DynamoPerOp != 0 || f.DynamoPerOp != 0 {
		t.Errorf("requests per add: ddb %.2f DynamoDB %.2f S3 %.0f sequential; dir %.2f, flightns %.2f DynamoDB", g.DynamoPerOp, g.S3PerOp, g.S3Sequential, d.DynamoPerOp, f.DynamoPerOp)
	}
	for _, want := range []string{"0.60× of Lance alone", "1.20× of Lance's managed directory", "1.20× of Lance with DynamoDB", "sequential round trips per add (median): 6 (Lance alone 4, Lance's managed directory 11, Lance with DynamoDB 9)", "1 adds failed over the rounds, the first: lost"} {
		if !strings.Contains(f.Note, want) {
			t.Errorf("flightns note lacks %q: %s", want, f.Note)
		}
	}
	if !strings.Contains(g.Note, "DynamoDB per commit: 2.00 (PutItem 2.00)") {
		t.Errorf("ddb note: %s", g.Note)
	}
	for _, r := range lanceS3Rows(3, runs, "minio", false) {
		if strings.Contains(r.Note, "round trips") {
			t.Errorf("%s at several processes speaks of round trips it did not measure: %s", r.Scenario, r.Note)
		}
	}
}

// byScenario indexes results by their scenario.
func byScenario(results []Result) map[string]Result {
	got := map[string]Result{}
	for _, r := range results {
		got[r.Scenario] = r
	}
	return got
}

func atof(s string) float64 {
	f, _ := strconv.ParseFloat(s, 64)
	return f
}
