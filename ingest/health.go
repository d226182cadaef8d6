package ingest

import (
	"encoding/json"
	"errors"
	"net/http"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickdb/tickdb/writer"
)

// health is GET /health: {"status":"ok"}, or {"status":"degraded",
// "reasons":[{"table":..,"condition":..,"error":..}]} while a table takes
// no rows for want of room or of a working disk (room.go; table "" is a
// table that could not be created), or has failed for good. The status
// code is 200 either way: the server is alive and serves reads, and a
// restart would not bring room back, so a liveness probe must not kill
// it; the body, and tickdb_table_condition, say what is wrong.
func (h *httpAPI) health(w http.ResponseWriter, _ *http.Request) {
	body := struct {
		Status  string         `json:"status"`
		Reasons []healthReason `json:"reasons,omitempty"`
	}{Status: "ok", Reasons: h.s.sink.conditions()}
	if len(body.Reasons) > 0 {
		body.Status = "degraded"
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(body)
}

// healthReason is one table's condition in /health.
type healthReason struct {
	Table     string `json:"table"`
	Condition string `json:"condition"`
	Error     string `json:"error"`
}

// conditions lists the tables whose writers do not take rows, and the
// last refusal to create one if recent, from the writer goroutine's last
// copy of their counters (at most about 100 ms old). Any goroutine.
func (s *sink) conditions() []healthReason {
	var out []healthReason
	for name, st := range s.snapshot() {
		if st.Condition != writer.CondOK {
			out = append(out, healthReason{Table: name, Condition: st.Condition.String(), Error: st.ConditionErr})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Table < out[j].Table })
	if r, ok := s.lastRefusal(); ok && len(out) == 0 {
		out = append(out, healthReason{Condition: r.cond.String(), Error: r.err})
	}
	return out
}

// lastRefusal is the last refusal for want of room if it is recent
// (refusedFor).
func (s *sink) lastRefusal() (refusal, bool) {
	s.statsMu.Lock()
	r := s.refused
	s.statsMu.Unlock()
	return r, !r.at.IsZero() && time.Since(r.at) < refusedFor
}

// refuse answers a write the tables had no room for, if err is that: 503
// with Retry-After when nothing of it was stored (the common case:
// reserveRun refused it before any row), 507 naming the lines stored when
// a request larger than the room reserved at once was cut part way
// (partialError). It reports whether it answered.
func (h *httpAPI) refuse(w http.ResponseWriter, err error) bool {
	cond, ok := unavailable(err)
	if !ok {
		return false
	}
	var pe *partialError
	if errors.As(err, &pe) {
		h.writeError(w, http.StatusInsufficientStorage, "partially stored", pe.Error(), pe.Line)
		return true
	}
	code := "no space"
	if cond == writer.CondIOError {
		code = "io error"
	}
	w.Header().Set("Retry-After", strconv.Itoa(retryAfter))
	h.writeError(w, http.StatusServiceUnavailable, code, "nothing of this request was stored; retry later: "+err.Error(), 0)
	return true
}

// retryAfter is the Retry-After of a refused write, in seconds: a table
// takes rows again within about 10 ms of room coming back (its preparer
// retries every tick), so a client retrying this often loses little.
const retryAfter = 1

// conditionCollector exports each table's condition as a state set,
// tickdb_table_condition{table,condition} (1 for the condition the table
// is in, 0 for the others; table "" for a recent refusal to create a
// table), and the line-protocol rings held for want of room.
type conditionCollector struct {
	s          *sink
	cond, held *prometheus.Desc
}

func newConditionCollector(s *sink) *conditionCollector {
	return &conditionCollector{
		s: s,
		cond: prometheus.NewDesc("tickdb_table_condition",
			"Whether the table takes rows (ok) or not, and why: no_space, io_error (refused, retried by the server), failed (reopen).", []string{"table", "condition"}, nil),
		held: prometheus.NewDesc("tickdb_ingest_held_rings",
			"Event loops whose lines wait for room in their table (the loop reads nothing meanwhile: TCP backpressure).", nil, nil),
	}
}

func (c *conditionCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.cond
	ch <- c.held
}

func (c *conditionCollector) Collect(ch chan<- prometheus.Metric) {
	set := func(table string, now writer.Condition) {
		for _, k := range []writer.Condition{writer.CondOK, writer.CondNoSpace, writer.CondIOError, writer.CondFailed} {
			v := 0.0
			if k == now {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(c.cond, prometheus.GaugeValue, v, table, k.String())
		}
	}
	for name, st := range c.s.snapshot() {
		set(name, st.Condition)
	}
	if r, ok := c.s.lastRefusal(); ok {
		set("", r.cond)
	}
	ch <- prometheus.MustNewConstMetric(c.held, prometheus.GaugeValue, float64(c.s.heldN.load()))
}
