package redisclaim

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/flightns/flightns/objstore"
)

// The staging objects that commits no longer need — a winner's after its
// flip, a loser's after its conflict — are deleted after the reply, in
// batches: on S3 one DeleteObjects request takes a thousand keys, where a
// DELETE each would add a request to every commit. A batch goes once
// sweepEvery has passed since its first key was queued, or once it holds
// sweepBatch keys; Close sweeps what is left. Nothing waits for a sweep:
// a staging object is never read once its record is final (or its claim
// lost), a retry of the same request is answered from the record, and
// one left behind by a crash is what `admin gc` collects.
const (
	sweepEvery = time.Second
	sweepBatch = 1000
)

// sweeper queues staging objects to delete and deletes them in batches.
type sweeper struct {
	objs *objstore.Store
	log  *slog.Logger

	mu      sync.Mutex
	pending []string
	timer   *time.Timer // armed while pending is not empty
	closed  bool
	running sync.WaitGroup // sweeps in flight
}

func newSweeper(objs *objstore.Store, log *slog.Logger) *sweeper {
	return &sweeper{objs: objs, log: log}
}

// add queues key for deletion. After close it deletes key at once.
func (w *sweeper) add(key string) {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		w.sweep([]string{key})
		return
	}
	w.pending = append(w.pending, key)
	var batch []string
	switch {
	case len(w.pending) >= sweepBatch:
		batch = w.takeLocked()
	case w.timer == nil:
		w.timer = time.AfterFunc(sweepEvery, w.fire)
	}
	if batch != nil {
		w.running.Add(1)
	}
	w.mu.Unlock()
	if batch != nil {
		go func() { defer w.running.Done(); w.sweep(batch) }()
	}
}

// takeLocked empties the queue and disarms the timer. Call with mu.
func (w *sweeper) takeLocked() []string {
	batch := w.pending
	w.pending = nil
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
	return batch
}

func (w *sweeper) fire() {
	w.mu.Lock()
	batch := w.takeLocked()
	if len(batch) > 0 {
		w.running.Add(1)
	}
	w.mu.Unlock()
	if len(batch) > 0 {
		defer w.running.Done()
		w.sweep(batch)
	}
}

// flush deletes what is queued now and waits for every sweep in flight.
func (w *sweeper) flush() {
	w.mu.Lock()
	batch := w.takeLocked()
	w.mu.Unlock()
	w.sweep(batch)
	w.running.Wait()
}

// close flushes; later additions are deleted at once.
func (w *sweeper) close() {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.flush()
}

func (w *sweeper) sweep(keys []string) {
	if len(keys) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), afterCommitTimeout)
	defer cancel()
	if err := w.objs.DeleteMany(ctx, keys); err != nil {
		w.log.Warn("redisclaim: deleting staging manifests no commit needs any more (admin gc collects what is left)", "count", len(keys), "err", err)
	}
}
