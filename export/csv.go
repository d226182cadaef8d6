package export

import (
	"io"

	"github.com/tickdb/tickdb/query"
	"github.com/tickdb/tickdb/store"
)

// csvFile writes one CSV file through query's encoder, so that an export
// reads exactly as "tickdb query --format csv --ts rfc3339" prints: a
// header row, ts first as RFC 3339 in UTC with nine fractional digits, the
// other columns in schema order, a missing f64 (NaN) as an empty field.
type csvFile struct {
	enc *query.Encoder
	rs  int
}

func newCSVFile(w io.Writer, s *store.Schema, table string, symName func(uint32) (string, error)) *csvFile {
	return &csvFile{enc: query.NewEncoder(w, query.FormatCSV, query.TsRFC3339, s, table, symName), rs: s.RowSize}
}

func (c *csvFile) write(rows []byte, n int) error {
	for i := range n {
		if err := c.enc.Row(rows[i*c.rs : (i+1)*c.rs]); err != nil {
			return err
		}
	}
	return nil
}

// close writes the header of an empty file, and whatever is buffered.
func (c *csvFile) close() error { return c.enc.Close() }
