package sqlworker

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/flightns/flightns/internal/sqlengine"
	"github.com/flightns/flightns/nserror"
)

// The private protocol between the server and its worker: Flight over a
// Unix socket, every call carrying the worker's token.
const (
	tokenHeader  = "x-flightns-worker-token"
	seqHeader    = "x-flightns-catalog-seq"
	actionSchema = "schema"
	actionStatus = "status"
)

// queryTicket is a DoGet ticket: a query, its parameters, and the catalog
// sequence it must see.
type queryTicket struct {
	Query string           `json:"q"`
	Args  []typedArg       `json:"args,omitempty"`
	After uint64           `json:"after,omitempty"`
	Scope *sqlengine.Scope `json:"scope,omitempty"` // sqlengine.ScopeFrom the caller's
}

// typedArg is one parameter value with its Go type, so it binds on the
// other side exactly as it was given.
type typedArg struct {
	T string `json:"t"`
	V string `json:"v,omitempty"`
}

// encodeArgs turns parameter values (nil, bool, int64, uint64, float64,
// string, []byte, time.Time) into typedArgs.
func encodeArgs(args []any) ([]typedArg, error) {
	out := make([]typedArg, len(args))
	for i, a := range args {
		switch v := a.(type) {
		case nil:
			out[i] = typedArg{T: "null"}
		case bool:
			out[i] = typedArg{T: "bool", V: strconv.FormatBool(v)}
		case int64:
			out[i] = typedArg{T: "int64", V: strconv.FormatInt(v, 10)}
		case uint64:
			out[i] = typedArg{T: "uint64", V: strconv.FormatUint(v, 10)}
		case float64:
			out[i] = typedArg{T: "float64", V: strconv.FormatFloat(v, 'g', -1, 64)}
		case string:
			out[i] = typedArg{T: "string", V: v}
		case []byte:
			out[i] = typedArg{T: "bytes", V: base64.StdEncoding.EncodeToString(v)}
		case time.Time:
			out[i] = typedArg{T: "time", V: v.Format(time.RFC3339Nano)}
		default:
			return nil, nserror.New(nserror.InvalidInput, "parameter %d: a %T cannot be bound", i+1, a)
		}
	}
	return out, nil
}

// decodeArgs is encodeArgs's inverse; a malformed value is InvalidInput.
func decodeArgs(in []typedArg) ([]any, error) {
	out := make([]any, len(in))
	for i, a := range in {
		var err error
		switch a.T {
		case "null":
		case "bool":
			out[i], err = strconv.ParseBool(a.V)
		case "int64":
			out[i], err = strconv.ParseInt(a.V, 10, 64)
		case "uint64":
			out[i], err = strconv.ParseUint(a.V, 10, 64)
		case "float64":
			out[i], err = strconv.ParseFloat(a.V, 64)
		case "string":
			out[i] = a.V
		case "bytes":
			out[i], err = base64.StdEncoding.DecodeString(a.V)
		case "time":
			out[i], err = time.Parse(time.RFC3339Nano, a.V)
		default:
			err = fmt.Errorf("unknown type %q", a.T)
		}
		if err != nil {
			return nil, nserror.New(nserror.InvalidInput, "parameter %d: %v", i+1, err)
		}
	}
	return out, nil
}

// schemaRequest and schemaReply are the "schema" action's bodies; the
// schemas are Flight-serialized (the parameters as one field each).
type schemaRequest struct {
	Query string           `json:"q"`
	Scope *sqlengine.Scope `json:"scope,omitempty"`
}

type schemaReply struct {
	Schema []byte `json:"schema"`
	Params []byte `json:"params"`
}

// Status is what a worker reports of itself.
type Status struct {
	Pid     int    `json:"pid"`
	Visible uint64 `json:"visible"` // the newest catalog sequence its queries see
	// Panics counts the panics its calls recovered from (each a bug,
	// answered Internal and logged by the worker with its stack).
	Panics uint64 `json:"panics,omitempty"`
}

func marshal(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
