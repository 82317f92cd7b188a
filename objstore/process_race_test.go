package objstore_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/flightns/flightns/objstore"
)

// The cross-process race runs this test binary several times as children
// (TestMain dispatches on raceChildEnv). Each child races PutIfAbsent on the
// same keys at the same wall-clock instants and prints what it got.
const raceChildEnv = "FLIGHTNS_OBJSTORE_RACE_CHILD"

func TestMain(m *testing.M) {
	if spec := os.Getenv(raceChildEnv); spec != "" {
		os.Exit(raceChild(spec))
	}
	os.Exit(m.Run())
}

// raceChild: spec is "uri|writer|rounds|startUnixNano".
func raceChild(spec string) int {
	parts := strings.Split(spec, "|")
	writer, rounds := parts[1], atoi(parts[2])
	start := time.Unix(0, int64(atoi(parts[3])))
	s, err := objstore.Open(context.Background(), parts[0])
	if err != nil {
		fmt.Println("open", err)
		return 2
	}
	for r := range rounds {
		time.Sleep(time.Until(start.Add(time.Duration(r) * 25 * time.Millisecond)))
		err := s.PutIfAbsent(context.Background(), fmt.Sprintf("race/%03d.manifest", r), []byte(writer))
		switch {
		case err == nil:
			fmt.Printf("%d won\n", r)
		case errors.Is(err, objstore.ErrAlreadyExists):
			fmt.Printf("%d lost\n", r)
		default:
			fmt.Printf("%d error %v\n", r, err)
		}
	}
	return 0
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(err)
	}
	return n
}

func TestCreateOnlyRaceAmongProcessesOnFile(t *testing.T) {
	const procs, rounds = 4, 40
	dir := t.TempDir()
	uri := "file://" + dir
	start := time.Now().Add(500 * time.Millisecond).UnixNano()
	outs := make([]*bytes.Buffer, procs)
	cmds := make([]*exec.Cmd, procs)
	for p := range procs {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s|proc-%d|%d|%d", raceChildEnv, uri, p, rounds, start))
		outs[p] = &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = outs[p], outs[p]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[p] = cmd
	}
	for p, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v\n%s", p, err, outs[p])
		}
	}
	winners := make([][]int, rounds)
	for p, out := range outs {
		sc := bufio.NewScanner(out)
		n := 0
		for sc.Scan() {
			var r int
			var what string
			if _, err := fmt.Sscanf(sc.Text(), "%d %s", &r, &what); err != nil {
				t.Fatalf("child %d printed %q", p, sc.Text())
			}
			switch what {
			case "won":
				winners[r] = append(winners[r], p)
			case "lost":
			default:
				t.Fatalf("child %d: %s", p, sc.Text())
			}
			n++
		}
		if n != rounds {
			t.Fatalf("child %d reported %d rounds, want %d:\n%s", p, n, rounds, out)
		}
	}
	s, err := objstore.Open(context.Background(), uri)
	if err != nil {
		t.Fatal(err)
	}
	for r, w := range winners {
		if len(w) != 1 {
			t.Fatalf("round %d: winners %v, want exactly one", r, w)
		}
		got, err := s.Get(context.Background(), fmt.Sprintf("race/%03d.manifest", r))
		if err != nil || string(got) != fmt.Sprintf("proc-%d", w[0]) {
			t.Fatalf("round %d: content %q, %v; want the winner's (proc-%d)", r, got, err, w[0])
		}
	}
}
