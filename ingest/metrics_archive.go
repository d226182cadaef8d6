package ingest

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/tickdb/tickdb/archive"
)

// archiveCollector exports the archive's account of every table.
type archiveCollector struct {
	a                                  *archive.Archiver
	rows, pending, pendingBytes        *prometheus.Desc
	segs, bytes, failures, sync, lagTs *prometheus.Desc
}

func newArchiveCollector(a *archive.Archiver) *archiveCollector {
	d := func(name, help string) *prometheus.Desc {
		return prometheus.NewDesc(name, help, []string{"table"}, prometheus.Labels{"location": a.Location().String()})
	}
	return &archiveCollector{
		a:            a,
		rows:         d("tickdb_archive_rows", "Rows the archive's manifest holds: the end of its rows."),
		pending:      d("tickdb_archive_pending_segments", "Compressed segments on the local disk not in the archive yet (the archive's lag)."),
		pendingBytes: d("tickdb_archive_pending_bytes", "Bytes of the compressed segments not in the archive yet."),
		segs:         d("tickdb_archive_uploaded_segments_total", "Segments this server put into the archive."),
		bytes:        d("tickdb_archive_uploaded_bytes_total", "Bytes this server put into the archive, every object counted."),
		failures:     d("tickdb_archive_failures", "Attempts in a row that failed (0: the last one worked); the error is in GET /api/tables and the log."),
		sync:         d("tickdb_archive_last_sync_timestamp_seconds", "When the archive last held every compressed segment of the table (0: never)."),
		lagTs:        d("tickdb_archive_last_ts_seconds", "The newest timestamp the archive holds (0: none)."),
	}
}

func (c *archiveCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rows, c.pending, c.pendingBytes, c.segs, c.bytes, c.failures, c.sync, c.lagTs} {
		ch <- d
	}
}

func (c *archiveCollector) Collect(ch chan<- prometheus.Metric) {
	for _, st := range c.a.Status() {
		g := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, st.Table)
		}
		g(c.rows, float64(st.ArchivedRows))
		g(c.pending, float64(st.PendingSegs))
		g(c.pendingBytes, float64(st.PendingBytes))
		ch <- prometheus.MustNewConstMetric(c.segs, prometheus.CounterValue, float64(st.UploadedSegs), st.Table)
		ch <- prometheus.MustNewConstMetric(c.bytes, prometheus.CounterValue, float64(st.UploadedBytes), st.Table)
		g(c.failures, float64(st.Failures))
		var sync, last float64
		if !st.LastSync.IsZero() {
			sync = float64(st.LastSync.UnixNano()) / 1e9
		}
		if st.ArchivedRows > 0 {
			last = float64(st.LastTs) / 1e9
		}
		g(c.sync, sync)
		g(c.lagTs, last)
	}
}
