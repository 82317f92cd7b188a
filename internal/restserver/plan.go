package restserver

import (
	"net/http"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/flightns/flightns/planner"
)

// ArrowStreamType is the media type of plan_scan's answer.
const ArrowStreamType = "application/vnd.apache.arrow.stream"

// wantsJSON: plan_scan answers as an Arrow IPC stream unless the caller
// asks for JSON (?format=json, or Accept: application/json without the
// Arrow type).
func wantsJSON(r *http.Request) bool {
	if f := r.URL.Query().Get("format"); f != "" {
		return strings.EqualFold(f, "json")
	}
	a := r.Header.Get("Accept")
	return strings.Contains(a, "application/json") && !strings.Contains(a, ArrowStreamType)
}

// writePlan streams a plan as Arrow IPC.
func writePlan(w http.ResponseWriter, pl *planner.Plan) error {
	recs := pl.Records(memory.DefaultAllocator)
	defer func() {
		for _, r := range recs {
			r.Release()
		}
	}()
	w.Header().Set("Content-Type", ArrowStreamType)
	w.WriteHeader(http.StatusOK)
	iw := ipc.NewWriter(w, ipc.WithSchema(pl.Schema()))
	for _, r := range recs {
		if err := iw.Write(r); err != nil {
			return nil // the status is sent; the client sees a cut stream
		}
	}
	_ = iw.Close()
	return nil
}
