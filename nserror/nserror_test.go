package nserror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"
)

func TestSentinelsMatchByCodeWhateverTheMessage(t *testing.T) {
	err := New(TableNotFound, "table %q not found", "a$b")
	wrapped := fmt.Errorf("describe: %w", err)
	if !errors.Is(wrapped, ErrTableNotFound) {
		t.Fatalf("errors.Is(%v, ErrTableNotFound) = false", wrapped)
	}
	if errors.Is(wrapped, ErrNamespaceNotFound) {
		t.Fatalf("a TableNotFound error matched ErrNamespaceNotFound")
	}
	if got := wrapped.Error(); got != `describe: table "a$b" not found` {
		t.Fatalf("message = %q", got)
	}
}

func TestNewWrapsTheCauseGivenWithPercentW(t *testing.T) {
	err := New(Internal, "reading manifest: %w", io.ErrUnexpectedEOF)
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("cause lost: %v", err)
	}
	if !errors.Is(err, ErrInternal) {
		t.Fatalf("code lost: %v", err)
	}
}

func TestCodeOf(t *testing.T) {
	cases := []struct {
		name string
		err  error
		want Code
	}{
		{"nil", nil, -1},
		{"plain error is internal", io.EOF, Internal},
		{"direct", New(InvalidInput, "bad id"), InvalidInput},
		{"wrapped", fmt.Errorf("x: %w", New(ConcurrentModification, "taken")), ConcurrentModification},
		{"sentinel", ErrThrottling, Throttling},
		{"a deadline is an unknown outcome", fmt.Errorf("redis: %w", context.DeadlineExceeded), ServiceUnavailable},
		{"a code given wins over the deadline", New(ConcurrentModification, "taken: %w", context.DeadlineExceeded), ConcurrentModification},
	}
	for _, c := range cases {
		if got := CodeOf(c.err); got != c.want {
			t.Errorf("%s: CodeOf = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCodeNamesFollowTheSpecNumbers(t *testing.T) {
	for code, name := range map[Code]string{1: "NamespaceNotFound", 11: "TableVersionNotFound", 14: "ConcurrentModification", 21: "Throttling"} {
		if code.String() != name {
			t.Errorf("Code(%d).String() = %q, want %q", int(code), code.String(), name)
		}
	}
	if got := Code(99).String(); got != "Code(99)" {
		t.Errorf("unknown code prints %q", got)
	}
}

// Redis's "not now" replies, as the real client returns them from a
// server that answers every command with one, and network failures are
// ServiceUnavailable; any other Redis reply error stays Internal.
func TestRedisNotNowRepliesAreServiceUnavailable(t *testing.T) {
	for reply, want := range map[string]Code{
		"LOADING Redis is loading the dataset in memory":              ServiceUnavailable,
		"READONLY You can't write against a read only replica.":       ServiceUnavailable,
		"CLUSTERDOWN The cluster is down":                             ServiceUnavailable,
		"TRYAGAIN Multiple keys request during rehashing of slot":     ServiceUnavailable,
		"MASTERDOWN Link with MASTER is down and replica-serve-stale": ServiceUnavailable,
		"ERR unknown command":                                         Internal,
		"NOSCRIPT No matching script":                                 Internal,
	} {
		err := replyOf(t, reply)
		if err == nil {
			t.Fatalf("%s: no error", reply)
		}
		wrapped := fmt.Errorf("redisclaim: claim: %w", err)
		if got := CodeOf(wrapped); got != want {
			t.Errorf("%s (%T): %v, want %v", reply, err, got, want)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer func() { _ = c.Close() }()
	if err := c.Ping(context.Background()).Err(); CodeOf(fmt.Errorf("x: %w", err)) != ServiceUnavailable {
		t.Errorf("a connection refused: %v (%T) is %v", err, err, CodeOf(err))
	}
	if CodeOf(errors.New("LOADING but not from Redis")) != Internal {
		t.Error("a plain error that starts like a Redis reply is not Redis's")
	}
}

// replyOf is the error the real Redis client returns for a command whose
// reply is the error reply msg.
func replyOf(t *testing.T, msg string) error {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = conn.Close() }()
				buf := make([]byte, 4096)
				for {
					if _, err := conn.Read(buf); err != nil {
						return
					}
					if _, err := conn.Write([]byte("-" + msg + "\r\n")); err != nil {
						return
					}
				}
			}()
		}
	}()
	c := redis.NewClient(&redis.Options{Addr: l.Addr().String(), MaxRetries: -1, Protocol: 2, DisableIdentity: true})
	defer func() { _ = c.Close() }()
	return c.Get(context.Background(), "k").Err()
}
