package bench

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// runState is what the scenarios of one Run share: the ceilings measured
// so far, and the progress display.
type runState struct {
	ceil    *ceilings
	tracker *tracker
}

func newRunState(cfg Config, selected []Scenario) *runState {
	return &runState{ceil: newCeilings(), tracker: newTracker(cfg, selected)}
}

func (r *runState) close() {
	r.tracker.finish()
	r.ceil.close()
}

// tracker shows progress: one line per finished measurement, and, on a
// terminal, a bar under them that counts measurements against an estimate
// (each scenario's Steps), corrected as each scenario ends.
type tracker struct {
	mu    sync.Mutex
	w     io.Writer
	bar   *progressbar.ProgressBar
	steps []int // estimated results per selected scenario
	names []string
	cur   int // index of the running scenario
	shown int // results shown so far
	base  int // results shown before the running scenario
	stop  chan struct{}
	tick  sync.WaitGroup
}

func newTracker(cfg Config, selected []Scenario) *tracker {
	t := &tracker{w: cfg.Progress}
	for _, s := range selected {
		n := 1
		if s.Steps != nil {
			n = max(1, s.Steps(cfg))
		}
		t.steps = append(t.steps, n)
		t.names = append(t.names, s.Name)
	}
	if cfg.ProgressBar && cfg.Progress != nil {
		t.bar = progressbar.NewOptions(t.total(0, 0),
			progressbar.OptionSetWriter(cfg.Progress),
			progressbar.OptionShowCount(),
			progressbar.OptionSetItsString("measurements"),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionSetPredictTime(true),
			progressbar.OptionSetWidth(30))
		// Redraw every half second, so the clock moves during long
		// measurements and set-ups.
		t.stop = make(chan struct{})
		t.tick.Go(func() {
			tk := time.NewTicker(500 * time.Millisecond)
			defer tk.Stop()
			for {
				select {
				case <-t.stop:
					return
				case <-tk.C:
					_ = t.bar.Add(0)
				}
			}
		})
	}
	return t
}

// total is the estimated number of results: done so far plus the
// estimates of the scenarios from `from` on, less what the running one
// has already shown.
func (t *tracker) total(from, shownInFrom int) int {
	n := t.shown
	for i := from; i < len(t.steps); i++ {
		n += t.steps[i]
	}
	return max(n-shownInFrom, t.shown+1)
}

// start marks the beginning of scenario i.
func (t *tracker) start(i int, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cur, t.base = i, t.shown
	if t.bar != nil {
		t.bar.ChangeMax(t.total(i, 0))
		t.bar.Describe(fmt.Sprintf("[%d/%d] %s", i+1, len(t.steps), name))
		_ = t.bar.RenderBlank()
	}
}

// done shows a finished measurement. A ceiling measured on behalf of
// another scenario is shown but not counted: the estimates leave them out.
func (t *tracker) done(r Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.cur < len(t.names) && r.Scenario != t.names[t.cur] && (r.Scenario == "objstore-put" || r.Scenario == "ceiling:scripted-claim") {
		if t.bar != nil {
			_, _ = progressbar.Bprintln(t.bar, r.line())
			_ = t.bar.Add(0)
		} else if t.w != nil {
			_, _ = fmt.Fprintln(t.w, r.line())
		}
		return
	}
	t.shown++
	if t.bar == nil {
		if t.w != nil {
			_, _ = fmt.Fprintln(t.w, r.line())
		}
		return
	}
	// The line is printed above the bar at its next render.
	_, _ = progressbar.Bprintln(t.bar, r.line())
	t.bar.ChangeMax(t.total(t.cur, t.shown-t.base))
	_ = t.bar.Set(t.shown)
}

// finish ends the bar, leaving the lines above it. It may be called more
// than once.
func (t *tracker) finish() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bar == nil || t.stop == nil {
		return
	}
	close(t.stop)
	t.tick.Wait()
	t.stop = nil
	t.bar.ChangeMax(max(t.shown, 1))
	_ = t.bar.Finish()
	_, _ = fmt.Fprintln(t.w)
}
