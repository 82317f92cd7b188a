package objstore

import (
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// groupSync makes paths durable, sharing the work of concurrent callers
// the way a database shares a log sync (the pebble commit-pipeline shape).
//
// A caller queues its request; if no sync is running it becomes the leader.
// The leader takes every request queued so far as one batch: a batch of one
// is made durable with fsync(2) of its own paths; a larger batch with a
// single syncfs(2) of the filesystem, which covers all of them at the cost
// of one journal commit. The leader then serves the batches that queued
// meanwhile, until none is left, and every caller returns when the batch it
// was in is durable.
type groupSync struct {
	fsync  func(path string) error // one path's fsync(2)
	dir    *os.File                // the root directory, kept open for syncfs
	mu     sync.Mutex
	queue  []*syncReq
	active bool
	calls  int // sync calls so far, for tests
}

type syncReq struct {
	paths []string
	err   error
	done  chan struct{}
}

// sync returns when every path (a file or a directory under the root) is
// durable.
func (g *groupSync) sync(paths ...string) error {
	r := &syncReq{paths: paths, done: make(chan struct{})}
	g.mu.Lock()
	g.calls++
	g.queue = append(g.queue, r)
	if g.active {
		g.mu.Unlock()
		<-r.done
		return r.err
	}
	g.active = true
	for len(g.queue) > 0 {
		batch := g.queue
		g.queue = nil
		g.mu.Unlock()
		var err error
		if len(batch) == 1 {
			err = g.fsyncEach(batch[0].paths)
		} else {
			err = g.syncfs()
		}
		for _, b := range batch {
			b.err = err
			close(b.done)
		}
		g.mu.Lock()
	}
	g.active = false
	g.mu.Unlock()
	return r.err
}

func (g *groupSync) fsyncEach(paths []string) error {
	for _, p := range paths {
		if err := g.fsync(p); err != nil {
			return err
		}
	}
	return nil
}

func (g *groupSync) syncfs() error {
	for {
		err := unix.Syncfs(int(g.dir.Fd()))
		if err != unix.EINTR {
			return err
		}
	}
}
