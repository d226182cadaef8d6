package ingest

import (
	"log/slog"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickdb/tickdb/internal/vfs"
)

// metrics are the server's counters, exported in the Prometheus text
// format at GET /metrics. Each Server has its own registry (no global
// state). Counters on the per-row path are moved once per batch, not per
// row.
type metrics struct {
	reg          *prometheus.Registry
	accepted     *prometheus.CounterVec // rows stored, by table
	rejectedV    *prometheus.CounterVec // lines not stored, by table and reason
	conns        prometheus.Gauge
	connsRefused prometheus.Counter
	connsClosed  *prometheus.CounterVec
	bytesRead    prometheus.Counter
	backpress    prometheus.Counter
	applySec     prometheus.Histogram // time to append one batch of rows
	batchRows    prometheus.Histogram
	publishSec   prometheus.Histogram
	flushSec     prometheus.Histogram // one O_DIRECT write of the flusher
	visibleSec   prometheus.Histogram // socket read → rows published
	visibleHist  *hdrhistogram.Histogram
	visibleMu    sync.Mutex
	httpReqs     *prometheus.CounterVec
	tailStreams  prometheus.Gauge
	tailCutoffs  prometheus.Counter
	httpConns    prometheus.Gauge
	httpRefused  prometheus.Counter
	writeMem     prometheus.Gauge
	writeApply   prometheus.Histogram // the writer's time on one HTTP write request

	logMu      sync.Mutex
	logWindow  time.Time
	logged     int
	suppressed int
}

// logPerSecond bounds the bad-input log lines per second; the rest are
// counted and reported in one line when the next second opens.
const logPerSecond = 10

func newMetrics() *metrics {
	lat := prometheus.ExponentialBuckets(1e-6, 2, 24) // 1 µs .. 8 s
	m := &metrics{
		reg: prometheus.NewRegistry(),
		accepted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickdb_ingest_rows_accepted_total", Help: "Rows stored, by table.",
		}, []string{"table"}),
		rejectedV: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickdb_ingest_rows_rejected_total", Help: "Lines not stored, by table (empty when unknown) and reason.",
		}, []string{"table", "reason"}),
		conns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickdb_ingest_connections", Help: "Open line-protocol TCP connections.",
		}),
		connsRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickdb_ingest_connections_refused_total", Help: "Connections closed at accept because the limit was reached.",
		}),
		connsClosed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickdb_ingest_connections_closed_total", Help: "Connections the server closed, by why.",
		}, []string{"why"}),
		bytesRead: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickdb_ingest_read_bytes_total", Help: "Bytes read from line-protocol connections.",
		}),
		backpress: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickdb_ingest_backpressure_total", Help: "Times an event loop stopped reading because the writer's queue was full.",
		}),
		applySec: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickdb_append_batch_seconds", Help: "Time the writer took to append one batch of rows.", Buckets: lat,
		}),
		batchRows: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickdb_append_batch_rows", Help: "Rows per appended batch.", Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		publishSec: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickdb_publish_seconds", Help: "Time to publish every table's new rows after a batch.", Buckets: lat,
		}),
		flushSec: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickdb_flush_seconds", Help: "Duration of one O_DIRECT write by a table's flusher.", Buckets: lat,
		}),
		visibleSec: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickdb_ingest_read_to_visible_seconds", Help: "From reading a batch's first bytes off a socket to its rows being visible to readers.", Buckets: lat,
		}),
		visibleHist: hdrhistogram.New(1, int64(time.Minute), 3),
		httpReqs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "tickdb_http_requests_total", Help: "HTTP requests, by path and status code.",
		}, []string{"path", "code"}),
		tailStreams: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickdb_http_tail_streams", Help: "Open GET /tail event streams.",
		}),
		tailCutoffs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickdb_http_tail_cutoffs_total", Help: "GET /tail clients cut off because they did not take their events within the write timeout.",
		}),
		httpConns: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickdb_http_connections", Help: "Open HTTP connections.",
		}),
		httpRefused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "tickdb_http_connections_refused_total", Help: "HTTP connections answered 503 and closed at accept because the limit was reached.",
		}),
		writeApply: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "tickdb_http_write_apply_seconds", Help: "Time the writer goroutine took to check and store one HTTP write request (other clients' rows wait meanwhile).", Buckets: lat,
		}),
		writeMem: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "tickdb_http_write_memory_bytes", Help: "Memory the HTTP write requests in flight hold (read buffers, decompressors, staged rows), at most --max-write-memory.",
		}),
	}
	m.reg.MustRegister(m.accepted, m.rejectedV, m.conns, m.connsRefused, m.connsClosed, m.bytesRead,
		m.backpress, m.applySec, m.batchRows, m.publishSec, m.flushSec, m.visibleSec, m.httpReqs, m.tailStreams, m.tailCutoffs, m.httpConns, m.httpRefused, m.writeMem, m.writeApply)
	return m
}

func (m *metrics) rejected(table, reason string) { m.rejectedV.WithLabelValues(table, reason).Inc() }

func (m *metrics) addAccepted(table string, n uint64) {
	if n > 0 {
		m.accepted.WithLabelValues(table).Add(float64(n))
	}
}

func (m *metrics) connGauge(d int)                { m.conns.Add(float64(d)) }
func (m *metrics) connRefused()                   { m.connsRefused.Inc() }
func (m *metrics) connClosed(why string)          { m.connsClosed.WithLabelValues(why).Inc() }
func (m *metrics) readBytes(n uint64)             { m.bytesRead.Add(float64(n)) }
func (m *metrics) backpressure()                  { m.backpress.Inc() }
func (m *metrics) flushed(_ int, d time.Duration) { m.flushSec.Observe(d.Seconds()) }
func (m *metrics) http(path string, code int) {
	m.httpReqs.WithLabelValues(path, strconv.Itoa(code)).Inc()
}

// readToVisible records one batch's socket-read → visible time.
func (m *metrics) readToVisible(ns int64) {
	m.visibleSec.Observe(float64(ns) / 1e9)
	m.visibleMu.Lock()
	_ = m.visibleHist.RecordValue(max(ns, 1))
	m.visibleMu.Unlock()
}

// resetReadToVisible forgets the recorded read → visible times.
func (m *metrics) resetReadToVisible() {
	m.visibleMu.Lock()
	m.visibleHist.Reset()
	m.visibleMu.Unlock()
}

// logBad logs one line about bad input, at most logPerSecond a second.
func (m *metrics) logBad(log *slog.Logger, msg string, args ...any) {
	m.logMu.Lock()
	now := time.Now()
	if now.Sub(m.logWindow) >= time.Second {
		if m.suppressed > 0 {
			log.Warn("ingest: bad-input messages suppressed", "count", m.suppressed)
		}
		m.logWindow, m.logged, m.suppressed = now, 0, 0
	}
	ok := m.logged < logPerSecond
	if ok {
		m.logged++
	} else {
		m.suppressed++
	}
	m.logMu.Unlock()
	if ok {
		log.Warn(msg, args...)
	}
}

// tableCollector exports the writers' own counters (rows, durable rows,
// durable lag, out-of-order rows, flushes) from the sink's last snapshot.
type tableCollector struct {
	s                                       *sink
	rows, durable, lag, ooo, flushes, bytes *prometheus.Desc
	hotSegs, hotRows, late, disk            *prometheus.Desc
	rings                                   []*ring
	depth                                   *prometheus.Desc
}

func newTableCollector(s *sink, rings []*ring) *tableCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"table"}, nil)
	}
	return &tableCollector{
		s:       s,
		rows:    d("tickdb_table_rows", "Rows published (visible to readers)."),
		durable: d("tickdb_table_durable_rows", "Rows durable on disk."),
		lag:     d("tickdb_table_durable_lag_rows", "Published rows not yet durable."),
		ooo:     d("tickdb_table_out_of_order_total", "Rows later than the late window, rejected or restamped, since the table was created."),
		late:    d("tickdb_table_late_rows_total", "Rows stored late (inside the late window; queries return them in ts order), since the table was created."),
		flushes: d("tickdb_table_flushes_total", "O_DIRECT writes by the table's flusher (this run)."),
		bytes:   d("tickdb_table_flush_bytes_total", "Bytes written by the table's flusher (this run)."),
		hotSegs: d("tickdb_table_hot_segments", "Sealed, durable segments kept in shared memory (the hot budget)."),
		hotRows: d("tickdb_table_hot_rows", "Rows of the hot segments: read from shared memory, not from disk."),
		disk:    d("tickdb_table_disk_bytes", "Bytes the table's files take on disk: the blocks allocated to them (tickdb stat's bytes). Segment files are sparse, so the sum of their sizes is larger."),
		rings:   rings,
		depth:   prometheus.NewDesc("tickdb_ingest_queue_depth", "Batches queued from an event loop to the writer.", []string{"loop"}, nil),
	}
}

func (c *tableCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rows, c.durable, c.lag, c.ooo, c.flushes, c.bytes, c.hotSegs, c.hotRows, c.late, c.disk, c.depth} {
		ch <- d
	}
}

func (c *tableCollector) Collect(ch chan<- prometheus.Metric) {
	for name, st := range c.s.snapshot() {
		ch <- prometheus.MustNewConstMetric(c.rows, prometheus.GaugeValue, float64(st.Visible), name)
		ch <- prometheus.MustNewConstMetric(c.durable, prometheus.GaugeValue, float64(st.Durable), name)
		ch <- prometheus.MustNewConstMetric(c.lag, prometheus.GaugeValue, float64(st.Visible-min(st.Durable, st.Visible)), name)
		ch <- prometheus.MustNewConstMetric(c.ooo, prometheus.CounterValue, float64(st.OutOfOrder), name)
		ch <- prometheus.MustNewConstMetric(c.late, prometheus.CounterValue, float64(st.Late), name)
		ch <- prometheus.MustNewConstMetric(c.flushes, prometheus.CounterValue, float64(st.Flushes), name)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(st.FlushBytes), name)
		ch <- prometheus.MustNewConstMetric(c.hotSegs, prometheus.GaugeValue, float64(st.HotSegments), name)
		ch <- prometheus.MustNewConstMetric(c.hotRows, prometheus.GaugeValue, float64(st.HotRows), name)
		if u, err := vfs.DirUsage(filepath.Join(c.s.opts.DB, name)); err == nil {
			ch <- prometheus.MustNewConstMetric(c.disk, prometheus.GaugeValue, float64(u.Bytes), name)
		}
	}
	for i, r := range c.rings {
		ch <- prometheus.MustNewConstMetric(c.depth, prometheus.GaugeValue, float64(r.depth()), strconv.Itoa(i))
	}
}
