package main

import (
	"bufio"
	"encoding/json"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/api"
)

// flightns changes prints the history and ends; with --follow it prints
// each change as it happens and keeps going across a server restart,
// resuming after the last sequence it printed: nothing missed, nothing
// twice.
func TestChangesFollowsAcrossAServerRestart(t *testing.T) {
	work := t.TempDir()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rest := l.Addr().String()
	_ = l.Close()
	args := []string{"--rest-addr", rest, "--flight-addr", "127.0.0.1:0", "--metrics-addr", "127.0.0.1:0"}
	srv := startServer(t, work, nil, args...)
	mustREST(t, rest, "/v1/namespace/a/create", "{}", nil)

	code, out, errOut := runCLI(t, work, "changes", "--rest", "http://"+rest)
	if code != 0 || len(lines(out)) != 1 || !strings.Contains(out, `"type":"namespace.created"`) {
		t.Fatalf("changes: %d %q %q", code, out, errOut)
	}
	code, out, _ = runCLI(t, work, "changes", "--rest", "http://"+rest, "--format", "table")
	if f := strings.Split(strings.TrimSpace(out), "\t"); code != 0 || len(f) < 5 || f[2] != "namespace.created" || f[3] != "a" {
		t.Fatalf("changes --format table: %d %q", code, out)
	}

	follow := exec.Command(binary, "changes", "--follow", "--rest", "http://"+rest)
	follow.Dir = work
	stdout, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = follow.Process.Kill(); _ = follow.Wait() })
	got := make(chan api.Event, 100)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			var ev api.Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("a line of changes --follow: %q: %v", sc.Text(), err)
			}
			got <- ev
		}
		close(got)
	}()
	want := func(ns string) {
		t.Helper()
		select {
		case ev := <-got:
			if ev.Type != api.EventNamespaceCreated || ev.ID.String() != ns {
				t.Fatalf("followed %+v, want namespace %s created", ev, ns)
			}
		case <-time.After(60 * time.Second):
			t.Fatalf("namespace %s's event never came", ns)
		}
	}
	want("a")
	mustREST(t, rest, "/v1/namespace/b/create", "{}", nil)
	want("b")
	srv.stop()
	// A follower's stream ends as the drain begins: it does not hold the
	// stop to its timeout.
	if strings.Contains(srv.Log(), "cut off") {
		t.Fatalf("the stop waited for the change feed's stream:\n%s", srv.Log())
	}
	startServer(t, work, nil, args...)
	mustREST(t, rest, "/v1/namespace/c/create", "{}", nil)
	want("c")
	select {
	case ev := <-got:
		t.Fatalf("an event more: %+v", ev)
	case <-time.After(time.Second):
	}
}

func lines(s string) []string { return strings.Split(strings.TrimSpace(s), "\n") }

// The table format names what each kind of event carries.
func TestChangesTableFormatShowsEachKindsDetails(t *testing.T) {
	at := time.Date(2026, 12, 6, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		ev   api.Event
		want string
	}{
		{api.Event{Seq: 1, Time: at, Type: api.EventTagCreated, ID: api.ID{"a", "t"}, Principal: "ana", Tag: "gold", Version: 3}, "a$t\tana\tv3 tag gold"},
		{api.Event{Seq: 2, Time: at, Type: api.EventBranchCreated, ID: api.ID{"a", "t"}, Branch: "dev", Version: 2, FromVersion: 2}, "a$t\t\tv2 branch dev from main@2"},
		{api.Event{Seq: 3, Time: at, Type: api.EventGrantCreated, ID: api.ID{"a"}, Group: "eng", Role: "write"}, "a\t\tgroup eng write"},
		{api.Event{Seq: 4, Time: at, Type: api.EventGrantDeleted, ID: api.ID{"a"}, Grantee: "rita"}, "a\t\tprincipal rita"},
		{api.Event{Seq: 5, Time: at, Type: api.EventTableCleaned, ID: api.ID{"a", "t"}, Versions: []uint64{1, 2}, Files: 7, Bytes: 900}, "a$t\t\tversions [1 2] 7 files, 900 bytes deleted"},
		{api.Event{Seq: 6, Time: at, Type: api.EventSequencesLost, LostThrough: 9}, "\t\tlost through 9"},
	} {
		var b strings.Builder
		if err := printEvent(&b, c.ev, "table"); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(b.String(), c.ev.Type+"\t"+c.want+"\n") {
			t.Errorf("%s: %q, want it to end %q", c.ev.Type, b.String(), c.want)
		}
	}
}
