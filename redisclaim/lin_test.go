package redisclaim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/flightns/flightns/internal/lancemanifest"
	"github.com/flightns/flightns/nserror"
)

// The sequential specification of one chain (a table's main, or one of
// its Lance branches, forked at version base + 1): its versions' contents
// in order. A Put of head+1 appends; a Put of a taken version conflicts;
// GetLatest returns the head and its content; Get returns a version's
// content (none below the fork). Put outcomes that are unknown (the writer
// crashed at a seam) take effect exactly when their version is the next
// one at the point the checker places them.

type linInput struct {
	op      string // put, latest, get
	table   string
	version uint64
	content string
	base    uint64 // a branch chain's versions start at base + 1
}

type linOutput struct {
	ok, conflict, unknown, notFound bool
	version                         uint64
	content                         string
}

type writerKey struct{}

// linHistory records the operations of concurrent clients, in
// nanoseconds from its start; an operation of unknown outcome never
// returns. Read ops once the clients are done.
type linHistory struct {
	start time.Time
	mu    sync.Mutex
	ops   []porcupine.Operation
}

func newLinHistory() *linHistory { return &linHistory{start: time.Now()} }

func (h *linHistory) now() int64 { return time.Since(h.start).Nanoseconds() }

// add records client's operation in, called at call, which answered out
// now.
func (h *linHistory) add(client int, in linInput, call int64, out linOutput) {
	ret := h.now()
	if out.unknown {
		ret = math.MaxInt64
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.ops = append(h.ops, porcupine.Operation{ClientId: client, Input: in, Call: call, Output: out, Return: ret})
}

// len is how many operations are recorded so far.
func (h *linHistory) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.ops)
}

var tableModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			t := op.Input.(linInput).table
			by[t] = append(by[t], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return "" },
	Step: func(state, input, output any) (bool, any) {
		st := state.(string)
		var versions []string
		if st != "" {
			versions = strings.Split(st, "\x00")
		}
		in, out := input.(linInput), output.(linOutput)
		head := in.base + uint64(len(versions))
		appendTo := func() string {
			if st == "" {
				return in.content
			}
			return st + "\x00" + in.content
		}
		switch in.op {
		case "put":
			switch {
			case out.unknown:
				if in.version == head+1 {
					return true, appendTo()
				}
				return true, st
			case out.ok:
				return in.version == head+1, appendTo()
			case out.conflict:
				return in.version <= head, st
			}
		case "latest":
			if out.notFound {
				return len(versions) == 0, st
			}
			return len(versions) > 0 && out.version == head && versions[len(versions)-1] == out.content, st
		case "get":
			if out.notFound {
				return in.version <= in.base || in.version > head, st
			}
			return in.version > in.base && in.version <= head && versions[in.version-in.base-1] == out.content, st
		}
		return false, st
	},
	DescribeOperation: func(input, output any) string {
		return fmt.Sprintf("%+v -> %+v", input, output)
	},
}

func TestHistoriesAreLinearizable(t *testing.T) {
	for _, c := range []struct{ faults, cluster bool }{{false, false}, {true, false}, {true, true}} {
		faults := c.faults
		t.Run(fmt.Sprintf("faults=%v,cluster=%v", c.faults, c.cluster), func(t *testing.T) {
			ctx := context.Background()
			var e *env
			if c.cluster {
				e = newEnvOn(t, nil, redistestCluster(t), "mem")
			} else {
				e = newEnv(t, "mem")
			}
			if faults {
				var mu sync.Mutex
				rng := rand.New(rand.NewPCG(1, 2))
				f := StepFunc(func(ctx context.Context, st Step, _ string, _ uint64) error {
					if ctx.Value(writerKey{}) == nil {
						return nil // readers that help are not cut
					}
					mu.Lock()
					defer mu.Unlock()
					if st != StepTxnRecorded && rng.IntN(10) == 0 {
						return errors.New("crash at " + string(st))
					}
					return nil
				})
				e.step.Store(&f)
			}
			// Main chains, and Lance branches forked from them.
			tables := []string{"a", "b", "c", lancemanifest.Chain{Table: "a", Branch: "dev"}.Key(), lancemanifest.Chain{Table: "b", Branch: "team/x"}.Key()}
			bases := map[string]uint64{lancemanifest.Chain{Table: "a", Branch: "dev"}.Key(): 2, lancemanifest.Chain{Table: "b", Branch: "team/x"}.Key(): 0}
			for chain, base := range bases {
				if err := e.s.Fork(ctx, chain, base+1); err != nil {
					t.Fatal(err)
				}
			}
			const clients, opsEach = 8, 60
			h := newLinHistory()
			var wg sync.WaitGroup
			for c := range clients {
				wg.Go(func() {
					rng := rand.New(rand.NewPCG(uint64(c), 99))
					for n := range opsEach {
						tbl := tables[rng.IntN(len(tables))]
						var in linInput
						var out linOutput
						call := h.now()
						switch r := rng.IntN(10); {
						case r < 4:
							in = linInput{op: "latest", table: tbl, base: bases[tbl]}
							loc, ok, err := e.s.GetLatestManifestLocation(ctx, tbl)
							if err != nil {
								t.Errorf("latest: %v", err)
								return
							}
							out = linOutput{notFound: !ok, version: loc.Version}
							if ok {
								out.content = e.final(tbl, loc.Version)
							}
						case r < 6:
							v := uint64(1 + rng.IntN(8))
							in = linInput{op: "get", table: tbl, version: v, base: bases[tbl]}
							p, err := e.s.Get(ctx, tbl, v)
							switch {
							case errors.Is(err, nserror.ErrTableVersionNotFound):
								out.notFound = true
							case err != nil:
								t.Errorf("get: %v", err)
								return
							default:
								b, gerr := e.objs.Get(ctx, p)
								if gerr != nil {
									t.Errorf("get %s: %v", p, gerr)
									return
								}
								out.content = string(b)
							}
						default:
							// Read the head, then try to commit the next version.
							v, _, _, err := e.s.GetLatestVersion(ctx, tbl)
							if err != nil {
								t.Errorf("latest before put: %v", err)
								return
							}
							v = max(v, bases[tbl])
							content := fmt.Sprintf("c%d-n%d", c, n)
							p := e.stage(tbl, v+1, content)
							in = linInput{op: "put", table: tbl, version: v + 1, content: content, base: bases[tbl]}
							call = h.now()
							_, err = e.s.Put(context.WithValue(ctx, writerKey{}, true), tbl, v+1, p, 0, "")
							switch {
							case err == nil:
								out.ok = true
							case isCode(err, nserror.ConcurrentModification):
								out.conflict = true
							case strings.Contains(err.Error(), "crash at"):
								out.unknown = true
							default:
								t.Errorf("put: %v", err)
								return
							}
						}
						h.add(c, in, call, out)
					}
				})
			}
			wg.Wait()
			history := h.ops
			res := porcupine.CheckOperationsTimeout(tableModel, history, 60*time.Second)
			if res != porcupine.Ok {
				t.Fatalf("history of %d operations is not linearizable (%v)", len(history), res)
			}
			puts, onBranches := 0, 0
			for _, op := range history {
				if in := op.Input.(linInput); in.op == "put" && op.Output.(linOutput).ok {
					puts++
					if strings.Contains(in.table, "/tree/") {
						onBranches++
					}
				}
			}
			if puts < 20 || onBranches < 5 {
				t.Fatalf("only %d successful puts, %d on branches: the history tests too little", puts, onBranches)
			}
		})
	}
}
