package main

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Issue 32, item 9: a query CancelFlightInfo cancels stops in the SQL
// worker process (the default isolation) and frees its slot: with one
// slot, the next query runs once the cancelled one let go. How long that
// took is logged; the bound asserted is generous (a hang, not a speed).
func TestACancelledQueryFreesItsSlotInTheSQLWorker(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	s := startServer(t, work, nil, "--sql-memory", "256MB", "--max-concurrent-queries", "1")
	defer s.stop()
	fc := flightClient(t, s.flight)
	ctx := context.Background()
	if err := fetchAll(ctx, fc, "SELECT 1"); err != nil {
		t.Fatal(err)
	}
	info, err := fc.Execute(ctx, "SELECT sum(hash(range)) FROM range(100000000000)")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		rdr, err := fc.DoGet(ctx, info.Endpoint[0].Ticket)
		if err == nil {
			for rdr.Next() {
			}
			err = rdr.Err()
			rdr.Release()
		}
		done <- err
	}()
	// The slot is the slow query's: another is refused.
	deadline := time.Now().Add(30 * time.Second)
	for status.Code(fetchAll(ctx, fc, "SELECT 1")) != codes.ResourceExhausted {
		if time.Now().After(deadline) {
			t.Fatal("the slow query never held the slot")
		}
		time.Sleep(20 * time.Millisecond)
	}
	asked := time.Now()
	res, err := fc.CancelFlightInfo(ctx, &flight.CancelFlightInfoRequest{Info: info})
	if err != nil || res.GetStatus() != flight.CancelStatusCancelled {
		t.Fatalf("cancel: %v, %v", res, err)
	}
	if err := <-done; status.Code(err) != codes.Canceled {
		t.Fatalf("the cancelled stream: %v, want Canceled", err)
	}
	for {
		err := fetchAll(ctx, fc, "SELECT 1")
		if err == nil {
			break
		}
		if status.Code(err) != codes.ResourceExhausted || time.Since(asked) > 10*time.Second {
			t.Fatalf("after the cancel: %v (%v after it)", err, time.Since(asked))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("the worker's slot was free %v after the cancel", time.Since(asked).Round(time.Millisecond))
}
