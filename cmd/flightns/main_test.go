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

func TestVersionHelpAndUnknownCommands(t *testing.T) {
	cases := []struct {
		args     []string
		code     int
		out, err string
	}{
		{[]string{"version"}, 0, "flightns dev (go1.", ""},
		{[]string{"help"}, 0, "flightns serve [flags]", ""},
		{nil, 2, "", "Usage:"},
		{[]string{"frobnicate"}, 2, "", `unknown command "frobnicate"`},
		{[]string{"serve", "--help"}, 0, "", "-redis"},
		{[]string{"serve", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
	}
	for _, c := range cases {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, &out, &errb)
		if code != c.code || !strings.Contains(out.String(), c.out) || !strings.Contains(errb.String(), c.err) {
			t.Errorf("flightns %v: code %d, stdout %q, stderr %q", c.args, code, out.String(), errb.String())
		}
	}
}

func TestBenchWritesAJSONReport(t *testing.T) {
	out := filepath.Join(t.TempDir(), "r.json")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"bench", "--scenario", "objstore-put", "--clients", "2", "--duration", "200ms", "--out", out}, &stdout, &stderr)
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
	if code := run(context.Background(), []string{"bench", "--scenario", "nope", "--duration", "1ms", "--out", "-"}, &stdout, &stderr); code != 1 || !strings.Contains(stderr.String(), `unknown scenario "nope"`) {
		t.Errorf("unknown scenario: code %d, stderr %q", code, stderr.String())
	}
}
