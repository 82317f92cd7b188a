package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"time"

	"github.com/flightns/flightns/internal/threads"
)

// feed-commits runs its subscribers in a process of their own (this
// executable again, as a subscriber host) under SCHED_IDLE, standing for
// subscribers on other machines: they read with whatever CPU the server
// and the writers leave, so that what is measured is what they cost the
// server, not the cores their decoding takes from the writers (in this
// process, 100 subscribers' decoding held the writers' goroutines back
// and cost more commits than the server's sending). The host checks
// every delivery as the in-process subscribers do.
//
// The parent and the host speak JSON lines over the host's stdin and
// stdout: a hostStart, answered by a hostReply once the subscribers are
// started; then any number of hostWait, each answered by a hostReply
// once every subscriber holds every version named (or why not); the
// parent closing stdin stops the host.

// subscriberHostEnv in a process's environment makes it a subscriber
// host (SubscriberHost).
const subscriberHostEnv = "FLIGHTNS_BENCH_SUBSCRIBER_HOST"

// hostStart is the host's first message: follow the feed of the server
// at flight and rest after sequence after, with n subscribers (half on
// Flight, half on SSE, as subscribe starts them); a wait fails after
// drain (the parent's feedDrainTimeout).
type hostStart struct {
	Flight string        `json:"flight"`
	REST   string        `json:"rest"`
	After  uint64        `json:"after"`
	N      int           `json:"n"`
	Drain  time.Duration `json:"drain"`
}

// hostWait asks the host to wait until every subscriber holds every
// version of keys.
type hostWait struct {
	Keys []hostKey `json:"keys"`
}

type hostKey struct {
	Table   string `json:"table"`
	Version uint64 `json:"version"`
}

// hostReply is the host's answer: Err empty when all went well.
type hostReply struct {
	Err string `json:"err,omitempty"`
}

// SubscriberHost runs this process as a subscriber host if its
// environment says so (the benchmark starts it so), and returns the exit
// code and true; otherwise it does nothing and returns false. A program
// that runs benchmarks (flightns-bench, this package's tests) calls it
// first thing.
func SubscriberHost() (code int, ok bool) {
	if os.Getenv(subscriberHostEnv) == "" {
		return 0, false
	}
	if err := hostSubscribers(context.Background(), os.Stdin, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "subscriber host: %v\n", err)
		return 1, true
	}
	return 0, true
}

// hostSubscribers serves the parent's messages from in, answering on out.
func hostSubscribers(ctx context.Context, in io.Reader, out io.Writer) error {
	dec, enc := json.NewDecoder(bufio.NewReaderSize(in, 1<<20)), json.NewEncoder(out)
	var start hostStart
	if err := dec.Decode(&start); err != nil {
		return fmt.Errorf("reading the start: %w", err)
	}
	if start.Drain > 0 {
		feedDrainTimeout = start.Drain
	}
	s := &feedServer{flightAddr: start.Flight, restURL: start.REST}
	var subs []*subscriber
	defer func() { stopAll(subs) }()
	reply := hostReply{}
	for i := range start.N {
		sub, err := s.startSubscriber(ctx, transportOf(i, start.N), start.After)
		if err != nil {
			reply.Err = err.Error()
			break
		}
		subs = append(subs, sub)
	}
	if err := enc.Encode(reply); err != nil || reply.Err != "" {
		return errors.Join(err, errorOf(reply))
	}
	for {
		var w hostWait
		if err := dec.Decode(&w); err != nil {
			if errors.Is(err, io.EOF) {
				return nil // the parent is done
			}
			return fmt.Errorf("reading a wait: %w", err)
		}
		keys := make([]versionKey, len(w.Keys))
		for i, k := range w.Keys {
			keys[i] = versionKey{k.Table, k.Version}
		}
		reply := hostReply{}
		if err := waitDelivered(ctx, subs, keys); err != nil {
			reply.Err = err.Error()
		}
		if err := enc.Encode(reply); err != nil {
			return err
		}
	}
}

func errorOf(r hostReply) error {
	if r.Err == "" {
		return nil
	}
	return errors.New(r.Err)
}

// transportOf is the transport of subscriber i of n: the first half on
// Flight, the rest on SSE (one of each for n = 2).
func transportOf(i, n int) string {
	if i < n/2 {
		return "flight"
	}
	return "sse"
}

// subscriberHost is a running subscriber host, as its parent sees it.
type subscriberHost struct {
	cmd  *exec.Cmd
	in   io.WriteCloser
	enc  *json.Encoder
	dec  *json.Decoder
	done chan struct{} // closed when the host has exited
	err  error         // how it exited; read after done
}

// startHost starts a subscriber host of n subscribers of s's feed after
// sequence after, under SCHED_IDLE, and returns once they are started.
func (s *feedServer) startHost(ctx context.Context, n int, after uint64) (_ *subscriberHost, err error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), subscriberHostEnv+"=1")
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	h := &subscriberHost{cmd: cmd, in: in, enc: json.NewEncoder(in), dec: json.NewDecoder(out), done: make(chan struct{})}
	go func() {
		h.err = cmd.Wait()
		close(h.done)
	}()
	defer func() {
		if err != nil {
			h.close()
		}
	}()
	if err := threads.Idle(cmd.Process.Pid); err != nil {
		return nil, err
	}
	if err := h.ask(ctx, hostStart{Flight: s.flightAddr, REST: s.restURL, After: after, N: n, Drain: feedDrainTimeout}); err != nil {
		return nil, fmt.Errorf("starting %d subscribers: %w", n, err)
	}
	return h, nil
}

// ask sends the host msg and waits for its reply.
func (h *subscriberHost) ask(ctx context.Context, msg any) error {
	if err := h.enc.Encode(msg); err != nil {
		return fmt.Errorf("the subscriber host: %w", err)
	}
	replied := make(chan error, 1)
	go func() {
		var r hostReply
		if err := h.dec.Decode(&r); err != nil {
			replied <- fmt.Errorf("the subscriber host answered nothing: %w", err)
			return
		}
		replied <- errorOf(r)
	}()
	select {
	case err := <-replied:
		return err
	case <-ctx.Done():
		h.close()
		return ctx.Err()
	}
}

// delivered waits until every subscriber holds every version of keys.
func (h *subscriberHost) delivered(ctx context.Context, keys []versionKey) error {
	w := hostWait{Keys: make([]hostKey, len(keys))}
	for i, k := range keys {
		w.Keys[i] = hostKey{k.table, k.version}
	}
	return h.ask(ctx, w)
}

func (h *subscriberHost) pid() int { return h.cmd.Process.Pid }

// close stops the host: it stops its subscribers when its stdin closes,
// and is killed if it has not exited within hostExitTimeout.
func (h *subscriberHost) close() {
	_ = h.in.Close()
	select {
	case <-h.done:
	case <-time.After(hostExitTimeout):
		_ = h.cmd.Process.Kill()
		<-h.done
	}
}

// hostExitTimeout bounds a subscriber host's stopping.
const hostExitTimeout = 10 * time.Second
