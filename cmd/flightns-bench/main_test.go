package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchWritesAJSONReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"--scenario", "objstore-put", "--clients", "2", "--duration", "200ms", "--out", out}, &stdout, &stderr)
	if code != 0 {
		t.Fatalf("bench exited %d: %s", code, stderr.String())
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Results []struct {
			Scenario, Backend string
			Ops               int64
			OpsPerSec         float64 `json:"ops_per_sec"`
		}
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, b)
	}
	backends := map[string]bool{}
	for _, r := range rep.Results {
		if r.Scenario != "objstore-put" || r.Ops == 0 || r.OpsPerSec <= 0 {
			t.Errorf("result %+v measured nothing", r)
		}
		backends[r.Backend] = true
	}
	if len(backends) != 3 {
		t.Errorf("backends measured: %v, want file, mem and s3", backends)
	}
	if code := run(context.Background(), []string{"--scenario", "nope", "--duration", "1ms", "--out", "-"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `unknown scenario "nope"`) {
		t.Errorf("unknown scenario: code %d, stderr %q", code, stderr.String())
	}
	if code := run(context.Background(), []string{"bench", "--quick"}, &stdout, &stderr); code != 2 || !strings.Contains(stderr.String(), `unexpected argument "bench"`) {
		t.Errorf("a positional argument: code %d, stderr %q", code, stderr.String())
	}
}
