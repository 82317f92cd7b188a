package console

import (
	"math"
	"net/http"
	"sort"

	"github.com/flightns/flightns/nserror"
)

// metrics answers the metrics history as columns, one value per sample
// (null where a sample had no data), and the catalog sequence it is at
// (catalogSeq: the activity page lists the changes after it).
func (c *console) metrics(w http.ResponseWriter, r *http.Request) {
	if c.cfg.History == nil {
		writeError(w, c.log, nserror.New(nserror.ServiceUnavailable, "no metrics history"))
		return
	}
	samples := c.cfg.History.Samples()
	num := func(f float64) any {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil
		}
		return f
	}
	t := make([]int64, len(samples))
	series := map[string][]any{}
	add := func(name string, f float64) { series[name] = append(series[name], num(f)) }
	opNames := map[string]bool{}
	for i, s := range samples {
		t[i] = s.At.Unix()
		add("commits_per_s", s.CommitsPerS)
		add("conflicts_per_s", s.ConflictsPerS)
		add("claim_p50_ms", s.ClaimP50MS)
		add("claim_p99_ms", s.ClaimP99MS)
		add("request_p50_ms", s.RequestP50MS)
		add("request_p99_ms", s.RequestP99MS)
		add("group_commit_size", s.GroupCommitSize)
		add("materializer_lag", s.MaterializerLag)
		for k := range s.Ops {
			opNames[k] = true
		}
	}
	ops := map[string]map[string][]any{}
	names := make([]string, 0, len(opNames))
	for k := range opNames {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		o := map[string][]any{"per_s": make([]any, len(samples)), "p50_ms": make([]any, len(samples)), "p99_ms": make([]any, len(samples))}
		for i, s := range samples {
			if v, ok := s.Ops[k]; ok {
				o["per_s"][i], o["p50_ms"][i], o["p99_ms"][i] = num(v.PerS), num(v.P50MS), num(v.P99MS)
			}
		}
		ops[k] = o
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"interval_s": c.cfg.History.Every().Seconds(), "t": t, "series": series, "ops": ops, "seq": c.catalogSeq(r.Context()),
	})
}

// health answers the server's health.
func (c *console) health(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Health == nil {
		writeError(w, c.log, nserror.New(nserror.ServiceUnavailable, "no health report"))
		return
	}
	h := c.cfg.Health(r.Context())
	if h.Reasons == nil {
		h.Reasons = []string{}
	}
	writeJSON(w, http.StatusOK, h)
}
