package flighttest

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight/flightsql"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Strings runs query over Flight SQL at addr, without credentials, and
// returns the values of its first column as strings; any failure fails
// the test.
func Strings(tb testing.TB, addr, query string) []string {
	tb.Helper()
	fc, err := flightsql.NewClient(addr, nil, nil, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	defer func() { _ = fc.Close() }()
	ctx := context.Background()
	info, err := fc.Execute(ctx, query)
	if err != nil {
		tb.Fatal(err)
	}
	rdr, err := fc.DoGet(ctx, info.Endpoint[0].Ticket)
	if err != nil {
		tb.Fatal(err)
	}
	defer rdr.Release()
	var out []string
	for rdr.Next() {
		col := rdr.RecordBatch().Column(0)
		for i := 0; i < col.Len(); i++ {
			out = append(out, col.ValueStr(i))
		}
	}
	if err := rdr.Err(); err != nil {
		tb.Fatal(err)
	}
	return out
}
