package flighttest

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Strings runs query over Flight SQL at addr, without credentials, and
// returns the values of its first column as strings; any failure fails
// the test.
func Strings(tb testing.TB, addr, query string) []string {
	tb.Helper()
	out, err := Query(addr, query, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// Query is Strings returning the error instead, for a caller that polls;
// timeout, unless 0, bounds the whole query.
func Query(addr, query string, timeout time.Duration) ([]string, error) {
	fc, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer func() { _ = fc.Close() }()
	ctx := context.Background()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	info, err := fc.Execute(ctx, query)
	if err != nil {
		return nil, err
	}
	rdr, err := fc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0)
		for i := 0; i < col.Len(); i++ {
			out = append(out, col.ValueStr(i))
		}
	}
	return out, rdr.Err()
}
