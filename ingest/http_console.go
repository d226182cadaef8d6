package ingest

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"

	"github.com/tickdb/tickdb/archive"
	"github.com/tickdb/tickdb/internal/vfs"
	"github.com/tickdb/tickdb/reader"
	"github.com/tickdb/tickdb/store"
)

// console is the web console: a single page (index.html) with its script,
// style and the vendored uPlot (console/vendor/uplot, MIT, its licence
// beside it), all embedded: nothing is built or fetched at run time.
//
//go:embed console
var console embed.FS

// consoleHandler serves GET / (the page) and /console/... (its assets).
// Neither needs the token: they hold no data, and the page must load to
// ask for the token. Every request the page makes for data is guarded.
func (h *httpAPI) consoleHandler() (page, assets http.HandlerFunc) {
	sub, _ := fs.Sub(console, "console") // a constant path: cannot fail
	files := http.StripPrefix("/console/", http.FileServerFS(sub))
	page = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-cache")
		http.ServeFileFS(w, r, sub, "index.html")
	}
	assets = func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/console/" || r.URL.Path == "/console/index.html" {
			http.Redirect(w, r, "/", http.StatusMovedPermanently)
			return
		}
		files.ServeHTTP(w, r)
	}
	return page, assets
}

// apiTable is one table in GET /api/tables.
type apiTable struct {
	Name    string      `json:"name"`
	Schema  []apiColumn `json:"schema"`
	Rows    uint64      `json:"rows"`  // published rows (the next seq)
	First   uint64      `json:"first"` // first seq not deleted by retention
	FirstTs *int64      `json:"first_ts,omitempty"`
	LastTs  *int64      `json:"last_ts,omitempty"`
	// Symbols are the table's symbols, the key (first) sym column's
	// values, in id order, at most apiSymbols; SymCount how many there
	// are. Dictionary is the dictionary's size: with other sym columns
	// (tags, string fields) sharing it, their values too. Past
	// apiMaxLookups entries shared so, the symbols are not told apart:
	// the first names and the count are the dictionary's.
	Symbols    []string `json:"symbols"`
	SymCount   int      `json:"symbol_count"`
	Dictionary int      `json:"dictionary"`
	Bytes      int64    `json:"bytes"`         // on-disk size: the blocks allocated to the table's files
	Logical    int64    `json:"logical_bytes"` // the sum of their sizes, the holes of sparse segment files included
	WriterPid  int      `json:"writer_pid,omitempty"`
	Writer     string   `json:"writer"` // closed, open or recovering
	OutOfOrder uint64   `json:"out_of_order"`
	Late       uint64   `json:"late"`
	// Archive is the table's archive status (Options.Archive; absent
	// without one): what is up, what is pending (the lag), the last error.
	Archive *archiveStatus `json:"archive,omitempty"`
	Error   string         `json:"error,omitempty"`
}

// archiveStatus is a table's archive.TableStatus with where it goes.
type archiveStatus struct {
	Location string `json:"location"`
	archive.TableStatus
}

type apiColumn struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// apiSymbols bounds the symbol names one table lists; apiMaxLookups the
// dictionary whose symbols are told apart from other sym columns' values
// (a last-row lookup each, µs: the console asks often).
const (
	apiSymbols    = 1000
	apiMaxLookups = 10_000
)

// tables is GET /api/tables: what the console's Tables panel shows, from
// reader.Stat for each table: {"tables":[...],"sql":bool} with the tables
// in name order and sql true when GET /sql has a server (Options.SQLAddr;
// the Query panel then offers SQL). A table that cannot be read is listed
// with its error.
func (h *httpAPI) tables(w http.ResponseWriter, _ *http.Request) {
	names, err := reader.Tables(h.s.opts.DB)
	if err != nil {
		h.writeError(w, http.StatusInternalServerError, "internal error", err.Error(), 0)
		return
	}
	out := struct {
		Tables []apiTable `json:"tables"`
		SQL    bool       `json:"sql"`
	}{Tables: []apiTable{}, SQL: h.s.opts.SQLAddr != ""}
	for _, name := range names {
		t := apiTable{Name: name, Schema: []apiColumn{}, Symbols: []string{}}
		if err := statAPI(h.s.opts.DB, &t); err != nil {
			t.Error = err.Error()
		}
		if a := h.s.opts.Archive; a != nil {
			st, _ := a.TableStatus(name)
			t.Archive = &archiveStatus{Location: a.Location().String(), TableStatus: st}
		}
		out.Tables = append(out.Tables, t)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(out)
}

// statAPI fills t from the table's reader.
func statAPI(db string, t *apiTable) error {
	r, err := reader.Open(db, t.Name, nil)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, c := range r.Schema().Cols {
		t.Schema = append(t.Schema, apiColumn{c.Name, c.Type.String()})
	}
	st, err := r.Stat()
	if err != nil {
		return err
	}
	t.Rows, t.First, t.OutOfOrder, t.Late, t.SymCount, t.Dictionary = st.Rows, st.First, st.OutOfOrder, st.Late, st.Symbols, st.Symbols
	if st.Rows > st.First {
		t.FirstTs, t.LastTs = &st.FirstTs, &st.LastTs
	}
	t.Writer = st.WriterState.String()
	if st.WriterState != reader.WriterClosed {
		t.WriterPid = st.WriterPid
	}
	var ids []uint32
	nsym := 0
	for _, c := range r.Schema().Cols {
		if c.Type == store.TypeSym {
			nsym++
		}
	}
	if nsym > 1 && st.Symbols <= apiMaxLookups {
		if t.SymCount, err = r.SymbolsWithRows(st.Symbols, func(id uint32) {
			if len(ids) < apiSymbols {
				ids = append(ids, id)
			}
		}); err != nil {
			return err
		}
	} else {
		for id := range min(st.Symbols, apiSymbols) {
			ids = append(ids, uint32(id))
		}
	}
	for _, id := range ids {
		name, err := r.SymbolName(id)
		if err != nil {
			return err
		}
		t.Symbols = append(t.Symbols, name)
	}
	u, err := vfs.DirUsage(r.Dir())
	t.Bytes, t.Logical = u.Bytes, u.Logical
	return err
}
