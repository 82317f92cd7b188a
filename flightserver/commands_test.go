package flightserver

import (
	"context"
	"errors"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/flight"
	pb "github.com/apache/arrow-go/v18/arrow/flight/gen/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/dynamicpb"
	"google.golang.org/protobuf/types/known/anypb"
)

// Issue 32: docs/flight.md's table of Flight SQL commands names every
// command and action message of FlightSql.proto, each served or refused,
// and the server answers as it says: a served one is never Unimplemented
// or PermissionDenied (a request empty but for its query, SELECT 1, may be
// InvalidArgument), a refused one fails. Queries
// and metadata are asked with GetFlightInfo, updates and ingestion with
// DoPut, actions with DoAction.
func TestTheFlightSQLCommandTableIsTheProtocol(t *testing.T) {
	raw, err := os.ReadFile("../docs/flight.md")
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`^\| ((?:Command|Action)\w+) \| (served|refused) \| (.+) \|$`)
	doc := map[string]string{}
	for _, l := range strings.Split(string(raw), "\n") {
		if m := row.FindStringSubmatch(l); m != nil {
			if _, dup := doc[m[1]]; dup {
				t.Errorf("docs/flight.md lists %s twice", m[1])
			}
			doc[m[1]] = m[2]
		}
	}
	protocol := map[string]protoreflect.MessageDescriptor{}
	msgs := pb.File_FlightSql_proto.Messages()
	for i := range msgs.Len() {
		md := msgs.Get(i)
		name := string(md.Name())
		if strings.HasPrefix(name, "Command") || (strings.HasPrefix(name, "Action") && strings.HasSuffix(name, "Request")) {
			protocol[name] = md
		}
	}
	for name := range protocol {
		if _, ok := doc[name]; !ok {
			t.Errorf("docs/flight.md does not say whether %s is served", name)
		}
	}
	for name := range doc {
		if _, ok := protocol[name]; !ok {
			t.Errorf("docs/flight.md lists %s, which FlightSql.proto does not have", name)
		}
	}

	e := start(t)
	c := e.client()
	ctx := context.Background()
	for name, md := range protocol {
		req := dynamicpb.NewMessage(md)
		if q := md.Fields().ByName("query"); q != nil && q.Kind() == protoreflect.StringKind {
			req.Set(q, protoreflect.ValueOfString("SELECT 1")) // a query the gate admits
		}
		empty, err := anypb.New(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := proto.Marshal(empty)
		if err != nil {
			t.Fatal(err)
		}
		var answer error
		switch {
		case strings.HasPrefix(name, "Action"):
			typ := strings.TrimSuffix(strings.TrimPrefix(name, "Action"), "Request")
			var stream flight.FlightService_DoActionClient
			if stream, answer = c.Client.DoAction(ctx, &flight.Action{Type: typ, Body: body}); answer == nil {
				_, answer = stream.Recv()
			}
		case name == "CommandStatementUpdate" || name == "CommandPreparedStatementUpdate" || name == "CommandStatementIngest":
			answer = doPut(ctx, c.Client, body)
		default:
			_, answer = c.Client.GetFlightInfo(ctx, &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: body})
		}
		switch doc[name] {
		case "served": // an empty request may be invalid, never refused
			if c := status.Code(answer); c == codes.Unimplemented || c == codes.PermissionDenied {
				t.Errorf("%s is served by the docs, but the server answers %v", name, answer)
			}
		case "refused":
			if answer == nil {
				t.Errorf("%s is refused by the docs, but the server answers it", name)
			}
		}
	}
}

// doPut sends a DoPut whose descriptor is cmd, with no data, and returns
// the server's answer.
func doPut(ctx context.Context, c flight.Client, cmd []byte) error {
	stream, err := c.DoPut(ctx)
	if err != nil {
		return err
	}
	if err := stream.Send(&flight.FlightData{FlightDescriptor: &flight.FlightDescriptor{Type: flight.DescriptorCMD, Cmd: cmd}}); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	for {
		if _, err := stream.Recv(); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}
