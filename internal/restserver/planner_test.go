package restserver

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

func TestPartitionedTablesOverREST(t *testing.T) {
	s := startServer(t)
	schema := json.RawMessage(`{"fields":[
 {"name":"ts","nullable":true,"type":{"type":"timestamp"},"metadata":{"lance:field_id":"1"}},
 {"name":"user_id","nullable":true,"type":{"type":"int64"},"metadata":{"lance:field_id":"2"}}]}`)
	ok(t, "create", s.post("/v1/namespace/logs/partitioned/create", map[string]any{"schema": schema,
		"spec": map[string]any{"fields": []any{
			map[string]any{"source_ids": []int{1}, "transform": map[string]any{"type": "day"}},
			map[string]any{"source_ids": []int{2}, "transform": map[string]any{"type": "bucket", "num_buckets": 4}}}}}))
	var d struct {
		CurrentSpec int `json:"current_spec_id"`
	}
	ok(t, "describe", s.do("GET", "/v1/namespace/logs/partitioned/describe", nil)).decode(t, &d)
	if d.CurrentSpec != 1 {
		t.Fatalf("current spec %d", d.CurrentSpec)
	}
	var leaf struct {
		ID       []string `json:"id"`
		Location string   `json:"location"`
	}
	ok(t, "resolve", s.post("/v1/namespace/logs/partitioned/resolve", map[string]any{"row": map[string]any{"ts": "2024-01-02T03:04:05Z", "user_id": 42}})).decode(t, &leaf)
	if len(leaf.ID) != 5 || leaf.ID[4] != "dataset" || leaf.Location == "" {
		t.Fatalf("leaf %+v", leaf)
	}
	// plan_scan answers as an Arrow IPC stream.
	r := ok(t, "plan_scan", s.post("/v1/namespace/logs/partitioned/plan_scan", map[string]any{"filter": "user_id = 42 AND ts >= '2024-01-02'"}))
	if ct := r.header.Get("Content-Type"); ct != ArrowStreamType {
		t.Fatalf("content type %q", ct)
	}
	rd, err := ipc.NewReader(bytes.NewReader(r.body))
	if err != nil {
		t.Fatal(err)
	}
	rows := 0
	for rd.Next() {
		rec := rd.RecordBatch()
		rows += int(rec.NumRows())
		if rec.NumRows() > 0 && rec.Column(0).(*array.String).Value(0) != "logs$"+leaf.ID[1]+"$"+leaf.ID[2]+"$"+leaf.ID[3]+"$dataset" {
			t.Errorf("planned %s", rec.Column(0).(*array.String).Value(0))
		}
	}
	rd.Release()
	if rows != 1 {
		t.Fatalf("%d leaves planned, want 1", rows)
	}
	// …or as JSON when asked.
	var pj struct {
		Seq    uint64 `json:"catalog_seq"`
		Leaves []struct {
			Values map[string]any `json:"partition_values"`
		} `json:"leaves"`
	}
	ok(t, "plan_scan json", s.post("/v1/namespace/logs/partitioned/plan_scan?format=json", map[string]any{"filter": "ts < '2023-01-01'"})).decode(t, &pj)
	if len(pj.Leaves) != 0 || pj.Seq == 0 {
		t.Fatalf("json plan %+v", pj)
	}
	wantError(t, "a bad filter", s.post("/v1/namespace/logs/partitioned/plan_scan", map[string]any{"filter": "ts >"}), 13, 400)
	wantError(t, "a body id that disagrees", s.post("/v1/namespace/logs/partitioned/plan_scan", map[string]any{"id": []string{"other"}}), 13, 400)
	wantError(t, "not a partitioned table", s.post("/v1/namespace/nope/partitioned/describe", nil), 1, 404)
}
