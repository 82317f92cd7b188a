package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A quick run of the multi-table scenario, end to end against a real
// redis-server, redis-benchmark, a local directory and a MinIO
// server, yields a JSON report whose every commit result carries its
// ceilings, and a chart that decodes as a PNG.
func TestQuickRunWritesReportAndChart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, Config{Quick: true, Scenarios: []string{"commit-multi-table"}, TxnTables: []int{2},
		Clients: []int{1, 4}, Duration: 300 * time.Millisecond, Backends: []string{"file", "s3"}, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	jsonPath, pngPath := filepath.Join(dir, "run.json"), filepath.Join(dir, "run.png")
	var buf bytes.Buffer
	if err := rep.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(jsonPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var back Report
	raw, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatalf("the report is not JSON: %v", err)
	}
	if back.Config.RedisPersistence != "none" || !back.Config.Quick || back.Config.Duration != "300ms" {
		t.Errorf("config = %+v", back.Config)
	}

	count := map[string]int{}
	for _, r := range back.Results {
		key := r.Scenario + "/" + r.Backend
		count[key]++
		if r.Clients != 1 && r.Clients != 4 {
			t.Errorf("%s: clients = %d", key, r.Clients)
		}
		if r.Ops <= 0 || r.OpsPerSec <= 0 || r.P50Ms <= 0 || r.P95Ms < r.P50Ms || r.P99Ms < r.P95Ms {
			t.Errorf("%s at %d clients: ops=%d ops/s=%.0f p50=%.3f p95=%.3f p99=%.3f", key, r.Clients, r.Ops, r.OpsPerSec, r.P50Ms, r.P95Ms, r.P99Ms)
		}
		if r.Scenario != "commit-multi-table:2" {
			continue
		}
		if r.Errors != 0 {
			t.Errorf("%s at %d clients: %d errors", key, r.Clients, r.Errors)
		}
		if r.ClaimRatio <= 0 || r.StoreRatio <= 0 || r.Ratio <= 0 || r.Ceiling == "" {
			t.Errorf("%s at %d clients: ceiling %q ratio %.3f claim ratio %.3f store ratio %.3f", key, r.Clients, r.Ceiling, r.Ratio, r.ClaimRatio, r.StoreRatio)
		}
		if r.Ratio != r.ClaimRatio && r.Ratio != r.StoreRatio {
			t.Errorf("%s: ratio %.3f is neither ceiling's", key, r.Ratio)
		}
	}
	for _, key := range []string{"ceiling:scripted-claim/redis", "objstore-put/file", "objstore-put/s3",
		"commit-multi-table:2/file", "commit-multi-table:2/s3"} {
		if count[key] != 2 {
			t.Errorf("%s: %d results, want one per concurrency level (2)", key, count[key])
		}
	}
	if lines := strings.Count(progress.String(), "\n"); lines != len(back.Results) {
		t.Errorf("progress printed %d lines for %d results:\n%s", lines, len(back.Results), progress.String())
	}

	f, err := os.Create(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := back.WriteChart(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	pf, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = pf.Close() }()
	img, err := png.Decode(pf)
	if err != nil {
		t.Fatalf("the chart is not a PNG: %v", err)
	}
	// A row per charted scenario (the two ceilings and the commits), and
	// a third column for the commits' ratios.
	if b := img.Bounds(); b.Dx() < 3*400 || b.Dy() < 3*250 {
		t.Errorf("chart is %dx%d, want three rows of three panels", b.Dx(), b.Dy())
	}
}

// On a terminal the progress bar sits under the lines: every finished
// measurement is still printed, ceilings measured for another scenario
// included, and the bar ends full.
func TestProgressBarKeepsEveryLine(t *testing.T) {
	var out bytes.Buffer
	selected := []Scenario{{Name: "objstore-put"}, {Name: "commit-hot-table", Steps: func(Config) int { return 2 }}}
	tr := newTracker(Config{Progress: &out, ProgressBar: true}, selected)
	results := []Result{
		{Scenario: "objstore-put", Backend: "file", Clients: 1},
		{Scenario: "ceiling:scripted-claim", Backend: "redis", Clients: 1},
		{Scenario: "commit-hot-table", Backend: "mem", Clients: 1, Ratio: 0.5},
		{Scenario: "commit-hot-table", Backend: "mem", Clients: 8},
		{Scenario: "commit-hot-table", Backend: "mem", Clients: 32}, // more than estimated
	}
	tr.start(0, "objstore-put")
	tr.done(results[0])
	tr.start(1, "commit-hot-table")
	for _, r := range results[1:] {
		tr.done(r)
	}
	tr.finish()
	tr.finish()
	text := out.String()
	for _, r := range results {
		if !strings.Contains(text, r.line()+"\n") {
			t.Errorf("missing line %q in:\n%s", r.line(), text)
		}
	}
	if tr.shown != 4 {
		t.Errorf("counted %d measurements, want 4 (the ceiling measured for commit-hot-table is not one)", tr.shown)
	}
	if !strings.Contains(text, "100%") || !strings.Contains(text, "[2/2] commit-hot-table") {
		t.Errorf("the bar did not end full on the last scenario:\n%q", text)
	}
}
