package manifesttable

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"

	"github.com/flightns/flightns/nserror"
)

func TestSQLOverManifest(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	first := commit(t, tb, sampleChanges()...)
	var more []Change
	for v := uint64(3); v <= 40; v++ {
		more = append(more, put(Row{ObjectType: TypeTableVersion, ObjectID: "prod$sales$orders", TableVersion: v,
			ManifestPath: fmt.Sprintf("x/_versions/%d.manifest", v), ManifestSize: 100 + v}))
	}
	second := commit(t, tb, more...)
	third := commit(t, tb, del(TypeTableVersion, "prod$sales$orders", 40), put(Row{ObjectType: TypeNamespace, ObjectID: "prod", Metadata: `{"owner":"cy"}`}))

	cases := []struct {
		name string
		q    string
		args []any
		want []string
	}{
		{"point look-up of the latest version", `SELECT MAX(table_version) FROM __manifest WHERE object_id = ? AND object_type = 'table_version'`,
			[]any{"prod$sales$orders"}, []string{"39"}},
		{"listing", `SELECT object_id FROM __manifest WHERE object_type = 'namespace' ORDER BY object_id`, nil, []string{"prod", "prod$sales"}},
		{"group by", `SELECT object_type, count(*) FROM __manifest GROUP BY 1 ORDER BY 1`, nil,
			[]string{"namespace|2", "table|1", "table_version|39"}},
		{"json functions on metadata", `SELECT object_id, metadata->>'owner', CAST(json_extract(metadata, '$.tier') AS INTEGER) FROM namespaces ORDER BY 1`, nil,
			[]string{"prod|cy|∅", "prod$sales|bo|3"}},
		{"convenience views", `SELECT table_id, max(version), sum(manifest_size) FROM table_versions GROUP BY 1`, nil,
			[]string{"prod$sales$orders|39|5629"}},
		{"partition columns", `SELECT object_id, partition_spec_id, partition_field_1, partition_field_2 FROM tables`, nil,
			[]string{"prod$sales$orders|1|2026|eu"}},
		{"time travel: before the versions", `SELECT count(*) FROM manifest_at(?) WHERE object_type = 'table_version'`, []any{first}, []string{"2"}},
		{"time travel: before the delete", `SELECT MAX(table_version) FROM manifest_at(?) WHERE object_id = 'prod$sales$orders'`, []any{second}, []string{"40"}},
		{"time travel: old metadata", `SELECT metadata FROM manifest_at(?) WHERE object_id = 'prod' AND object_type = 'namespace'`, []any{second}, []string{`{"owner":"ana"}`}},
		{"time travel: now", `SELECT metadata FROM manifest_at(?) WHERE object_id = 'prod' AND object_type = 'namespace'`, []any{third}, []string{`{"owner":"cy"}`}},
	}
	for _, c := range cases {
		if got := rowsOf(t, tb, c.q, c.args...); !slices.Equal(got, c.want) {
			t.Errorf("%s: %s\n got %v\nwant %v", c.name, c.q, got, c.want)
		}
	}
	res, err := tb.Query(context.Background(), `SELECT 1`)
	if err != nil {
		t.Fatal(err)
	}
	if res.Seq != third {
		t.Errorf("a query reports sequence %d, want %d", res.Seq, third)
	}
	res.Release()
}

func TestSQLCannotReachFilesNetworkSettingsOrWrite(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	commit(t, tb, sampleChanges()...)
	// Statements that are not a query are refused by the gate, and a
	// query that reaches for files or the network by the sandbox: both
	// PermissionDenied.
	const ro, denied = nserror.PermissionDenied, nserror.PermissionDenied
	refused := []struct {
		q    string
		code nserror.Code
	}{
		{`SELECT * FROM read_csv('/etc/passwd')`, denied},
		{`SELECT * FROM read_text('/etc/hostname')`, denied},
		{`SELECT * FROM read_parquet('/tmp/*.parquet')`, denied},
		{`SELECT * FROM glob('/etc/*')`, denied},
		{`SELECT * FROM 'https://example.com/x.csv'`, denied},
		{`COPY (SELECT 1) TO '/tmp/flightns-escape.csv'`, denied},
		{`ATTACH '/tmp/flightns-escape.db' AS x`, ro},
		{`ATTACH ':memory:' AS x`, ro},
		{`CHECKPOINT`, ro},
		{`CREATE TEMP TABLE t (a INT)`, ro},
		{`INSTALL httpfs`, ro},
		{`LOAD httpfs`, ro},
		{`SET threads = 8`, ro},
		{`PRAGMA threads = 8`, ro},
		{`INSERT INTO _objects (object_id, object_type, _seq_from) VALUES ('evil', 'namespace', 1)`, ro},
		{`DELETE FROM _versions`, ro},
		{`WITH x AS (SELECT 1) DELETE FROM _versions`, ro},
		{`UPDATE _meta SET seq = 0`, ro},
		{`CREATE TABLE evil (a INT)`, ro},
		{`DROP VIEW __manifest`, ro},
		{`EXPORT DATABASE '/tmp/flightns-export'`, denied},
		{`SELECT 1; DELETE FROM _versions`, ro},
		{`SELECT 1; CHECKPOINT`, ro},
	}
	for _, c := range refused {
		res, err := tb.Query(context.Background(), c.q)
		if err == nil {
			for res.Next() {
			}
			err = res.Err()
			res.Release()
		}
		if err == nil {
			t.Errorf("%s: ran", c.q)
			continue
		}
		if got := nserror.CodeOf(err); got != c.code {
			t.Errorf("%s: %v (code %v), want %v", c.q, err, got, c.code)
		}
	}
	if got := rowsOf(t, tb, `SELECT count(*) FROM __manifest`); !slices.Equal(got, []string{"5"}) {
		t.Fatalf("the table changed: %v", got)
	}
}

func TestAQueryBeyondItsTimeIsStopped(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	start := time.Now()
	res, err := tb.Query(ctx, `SELECT sum(hash(range)) FROM range(100000000000) a`)
	if err == nil {
		for res.Next() {
		}
		err = res.Err()
		res.Release()
	}
	if err == nil {
		t.Fatal("an endless query finished")
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("the query ran %v past its deadline", time.Since(start))
	}
	// Stopped, not wrong: the outcome of a query cut by its deadline is
	// ServiceUnavailable (DuckDB's interrupt, or the deadline itself).
	if code := nserror.CodeOf(err); code != nserror.ServiceUnavailable {
		t.Fatalf("a query stopped by its deadline failed with %v (%v), want ServiceUnavailable", code, err)
	}
}

func TestReadYourWrites(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	ctx := context.Background()
	seq, err := tb.Append(ctx, []Change{put(Row{ObjectType: TypeNamespace, ObjectID: "fresh"})})
	if err != nil {
		t.Fatal(err)
	}
	if err := tb.WaitVisible(ctx, seq); err != nil {
		t.Fatal(err)
	}
	if got := rowsOf(t, tb, `SELECT object_id FROM namespaces`); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("after WaitDurable(%d): %v", seq, got)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if err := tb.WaitDurable(short, seq+1000); !errors.Is(err, nserror.ErrServiceUnavailable) {
		t.Fatalf("waiting for a sequence that never comes: %v", err)
	}
}

// Every result names the catalog sequence its rows reflect, while commits
// land during the queries: each commit adds one namespace named after a
// counter, so a result at sequence s must count exactly the namespaces of
// the commits at or below s.
func TestAResultNamesTheSequenceItsRowsReflect(t *testing.T) {
	e := newTenv(t)
	tb := e.open()
	defer func() { _ = tb.Close() }()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()

	var mu sync.Mutex
	namespacesAt := map[uint64]int{} // sequence -> namespaces after it
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 300 && ctx.Err() == nil; i++ {
			seq, err := tb.Append(ctx, []Change{put(Row{ObjectType: TypeNamespace, ObjectID: fmt.Sprintf("n%04d", i)})})
			if err != nil {
				return
			}
			mu.Lock()
			namespacesAt[seq] = i
			mu.Unlock()
			if i%3 == 0 { // let some commits land one by one
				_ = tb.WaitVisible(ctx, seq)
			}
		}
	}()
	seen := map[uint64]bool{}
	for {
		res, err := tb.Query(ctx, `SELECT count(*) FROM namespaces`)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for res.Next() {
			n = res.RecordBatch().Column(0).(*array.Int64).Value(0)
		}
		seq := res.Seq
		res.Release()
		// The writer records a sequence just after Append returns it: a
		// result may see it first.
		var want int
		known := false
		for wait := 0; wait < 200 && !known; wait++ {
			mu.Lock()
			want, known = namespacesAt[seq]
			mu.Unlock()
			if !known && seq > 0 {
				time.Sleep(5 * time.Millisecond)
			}
		}
		if seq > 0 && !known {
			t.Fatalf("a result at sequence %d, which no commit has", seq)
		}
		if int64(want) != n {
			t.Fatalf("the result at sequence %d counts %d namespaces, want %d", seq, n, want)
		}
		seen[seq] = true
		select {
		case <-done:
			if len(seen) < 20 {
				t.Fatalf("queries saw only %d sequences during the commits", len(seen))
			}
			return
		default:
		}
	}
}

// Planning a statement never waits for the statement to run: its pending
// result schedules tasks, and an idle engine thread starts one at once;
// destroying the pending result once waited for that task, which for an
// endless aggregate ended only at the planner's deadline; so did
// releasing a result before its end. Nor does planning wait for the
// queries that hold the engine's threads.
func TestPlanningDoesNotWaitForTheStatementToRun(t *testing.T) {
	e := newTenv(t)
	tb := e.open(func(c *Config) { c.Engine.Threads, c.Engine.MaxQueries = 2, 2 })
	defer func() { _ = tb.Close() }()
	const endless = `SELECT sum(hash(range)) FROM range(100000000000) a`
	plan := func(what string) {
		t.Helper()
		for i := range 3 {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			schema, _, err := tb.QuerySchema(ctx, endless)
			late := ctx.Err()
			cancel()
			if err != nil || schema.NumFields() != 1 {
				t.Fatalf("plan %d %s: %v, %v", i, what, schema, err)
			}
			if late != nil {
				t.Fatalf("plan %d %s returned only when its deadline passed", i, what)
			}
		}
	}
	plan("on an idle engine")
	// Nor does releasing a result nobody fetched.
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		res, err := tb.Query(ctx, endless)
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		res.Release()
		late := ctx.Err()
		cancel()
		if late != nil {
			t.Fatalf("release %d of an unfetched result returned only when its deadline passed", i)
		}
	}
	runCtx, stop := context.WithCancel(context.Background())
	defer stop()
	ended := make(chan error, 2)
	for range 2 {
		res, err := tb.Query(runCtx, endless)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer res.Release()
			for res.Next() {
			}
			ended <- res.Err()
		}()
	}
	plan("while two queries run")
	select {
	case err := <-ended:
		t.Fatalf("an endless query ended before the plans: %v", err)
	default:
	}
	stop()
	for range 2 {
		if err := <-ended; err == nil {
			t.Error("a cancelled endless query ended without an error")
		}
	}
}

// The engine's semaphore is the one bound on queries: past MaxQueries a
// query fails at once (Throttling, naming the limit) instead of queueing
// behind queries that may run for minutes; planning still answers, and
// the slot is free again once the result is released.
func TestAQueryPastTheEngineBoundFailsAtOnce(t *testing.T) {
	e := newTenv(t)
	tb := e.open(func(c *Config) { c.Engine.MaxQueries = 1 })
	defer func() { _ = tb.Close() }()
	ctx := context.Background()
	held, err := tb.Query(ctx, "SELECT * FROM range(10000000)")
	if err != nil {
		t.Fatal(err)
	}
	if n := tb.RunningQueries(); n != 1 || tb.MaxQueries() != 1 {
		t.Fatalf("%d running of %d, want 1 of 1", n, tb.MaxQueries())
	}
	wait, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	_, err = tb.Query(wait, "SELECT 1")
	if nserror.CodeOf(err) != nserror.Throttling || wait.Err() != nil || !strings.Contains(err.Error(), "limit 1") {
		t.Fatalf("a query past the bound: %v (waited: %v), want Throttling at once, naming the limit", err, wait.Err())
	}
	if _, _, err := tb.QuerySchema(ctx, "SELECT 1"); err != nil {
		t.Fatalf("planning while every query slot is taken: %v", err)
	}
	held.Release()
	if n := tb.RunningQueries(); n != 0 {
		t.Fatalf("%d queries running after the release", n)
	}
	res, err := tb.Query(ctx, "SELECT 1")
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	res.Release()
}
