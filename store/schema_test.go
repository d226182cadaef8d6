package store_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tickdb/tickdb/store"
)

func col(name string, t store.ColType) store.Column { return store.Column{Name: name, Type: t} }

var ts = col("ts", store.TypeTs)

// layoutCases are schemas with their expected layout: column offsets in
// schema order, row size and first sym column. The layout rule (8-byte
// columns, then sym, then bool, padding, check word in the last 4 bytes,
// size rounded to 8) is on-disk contract.
var layoutCases = []struct {
	name    string
	cols    []store.Column
	offs    []int
	rowSize int
	symCol  int
}{
	{"ts_only", []store.Column{ts}, []int{0}, 16, -1},
	{"tick", []store.Column{ts, col("sym", store.TypeSym), col("price", store.TypeF64), col("size", store.TypeI64)},
		[]int{0, 24, 8, 16}, 32, 1},
	{"one_bool", []store.Column{ts, col("flag", store.TypeBool)}, []int{0, 8}, 16, -1},
	{"three_bools_fill_pad", []store.Column{ts, col("a", store.TypeBool), col("b", store.TypeBool), col("c", store.TypeBool)},
		[]int{0, 8, 9, 10}, 16, -1},
	{"four_bools_need_new_word", []store.Column{ts, col("a", store.TypeBool), col("b", store.TypeBool), col("c", store.TypeBool), col("d", store.TypeBool)},
		[]int{0, 8, 9, 10, 11}, 16, -1},
	{"five_bools_spill", []store.Column{ts, col("a", store.TypeBool), col("b", store.TypeBool), col("c", store.TypeBool), col("d", store.TypeBool), col("e", store.TypeBool)},
		[]int{0, 8, 9, 10, 11, 12}, 24, -1},
	{"bool_sym_f64_reordered", []store.Column{ts, col("flag", store.TypeBool), col("sym", store.TypeSym), col("px", store.TypeF64)},
		[]int{0, 20, 16, 8}, 32, 2},
	{"two_syms_first_is_key", []store.Column{ts, col("venue", store.TypeSym), col("sym", store.TypeSym)},
		[]int{0, 8, 12}, 24, 1},
	{"sym_and_bool_share_word", []store.Column{ts, col("sym", store.TypeSym), col("f", store.TypeBool)},
		[]int{0, 8, 12}, 24, 1},
	{"odd_size_40", []store.Column{ts, col("sym", store.TypeSym), col("price", store.TypeF64), col("size", store.TypeI64), col("buy", store.TypeBool)},
		[]int{0, 24, 8, 16, 28}, 40, 1},
}

func maxSchema() []store.Column {
	cols := []store.Column{ts}
	for i := 1; i < store.MaxColumns; i++ {
		cols = append(cols, col("c"+strings.Repeat("x", i%40)+string(rune('a'+i%26))+string(rune('a'+i/26)), store.TypeF64))
	}
	return cols
}

func TestNewSchemaLayout(t *testing.T) {
	for _, tc := range layoutCases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.NewSchema(tc.cols...)
			if err != nil {
				t.Fatalf("NewSchema: %v", err)
			}
			if s.RowSize != tc.rowSize {
				t.Errorf("RowSize = %d, want %d", s.RowSize, tc.rowSize)
			}
			if s.SymCol != tc.symCol {
				t.Errorf("SymCol = %d, want %d", s.SymCol, tc.symCol)
			}
			for i, c := range tc.cols {
				got := s.ColAt(i)
				if got.Off != tc.offs[i] || got.Type != c.Type {
					t.Errorf("column %q at %+v, want offset %d type %v", c.Name, got, tc.offs[i], c.Type)
				}
				byName, ok := s.Col(c.Name)
				if !ok || byName != got {
					t.Errorf("Col(%q) = %+v, %v; want %+v", c.Name, byName, ok, got)
				}
				if s.Index(c.Name) != i {
					t.Errorf("Index(%q) = %d, want %d", c.Name, s.Index(c.Name), i)
				}
			}
			checkLayoutInvariants(t, s)
		})
	}
	t.Run("max_columns", func(t *testing.T) {
		s, err := store.NewSchema(maxSchema()...)
		if err != nil {
			t.Fatal(err)
		}
		if want := (8*store.MaxColumns + store.CheckSize + 7) &^ 7; s.RowSize != want {
			t.Errorf("RowSize = %d, want %d", s.RowSize, want)
		}
		checkLayoutInvariants(t, s)
	})
	t.Run("name_at_max_len", func(t *testing.T) {
		if _, err := store.NewSchema(ts, col(strings.Repeat("n", store.MaxColNameLen), store.TypeI64)); err != nil {
			t.Fatal(err)
		}
	})
}

// checkLayoutInvariants: columns are naturally aligned, do not overlap,
// stay clear of the check word, and the row is a whole number of words.
func checkLayoutInvariants(t *testing.T, s *store.Schema) {
	t.Helper()
	if s.RowSize%8 != 0 {
		t.Errorf("RowSize %d is not a multiple of 8", s.RowSize)
	}
	used := make([]int, s.RowSize)
	for i := range s.Cols {
		c := s.ColAt(i)
		w := map[store.ColType]int{store.TypeTs: 8, store.TypeF64: 8, store.TypeI64: 8, store.TypeSym: 4, store.TypeBool: 1}[c.Type]
		if c.Off%w != 0 {
			t.Errorf("column %d at %d is not %d-aligned", i, c.Off, w)
		}
		if c.Off+w > s.RowSize-store.CheckSize {
			t.Errorf("column %d [%d,%d) overlaps the check word at %d", i, c.Off, c.Off+w, s.RowSize-store.CheckSize)
		}
		for b := c.Off; b < c.Off+w && b < len(used); b++ {
			if used[b] != 0 {
				t.Errorf("column %d overlaps column %d at byte %d", i, used[b]-1, b)
			}
			used[b] = i + 1
		}
	}
	if s.ColAt(0).Off != 0 {
		t.Errorf("ts at %d, want 0", s.ColAt(0).Off)
	}
}

func TestNewSchemaErrors(t *testing.T) {
	tooMany := append(maxSchema(), col("one_more", store.TypeI64))
	cases := []struct {
		name string
		cols []store.Column
		want string
	}{
		{"no_columns", nil, "first column must be ts"},
		{"first_not_ts_name", []store.Column{col("time", store.TypeTs)}, "first column must be ts"},
		{"first_not_ts_type", []store.Column{col("ts", store.TypeI64)}, "first column must be ts"},
		{"first_is_sym", []store.Column{col("sym", store.TypeSym), ts}, "first column must be ts"},
		{"duplicate_name", []store.Column{ts, col("px", store.TypeF64), col("px", store.TypeI64)}, "duplicate column"},
		{"duplicate_ts", []store.Column{ts, col("ts", store.TypeI64)}, "duplicate column"},
		{"too_many_columns", tooMany, "at most 60"},
		{"empty_name", []store.Column{ts, col("", store.TypeF64)}, "name"},
		{"name_too_long", []store.Column{ts, col(strings.Repeat("n", store.MaxColNameLen+1), store.TypeF64)}, "name"},
		{"name_with_nul", []store.Column{ts, col("a\x00b", store.TypeF64)}, "name"},
		{"second_ts_type", []store.Column{ts, col("t2", store.TypeTs)}, "bad type"},
		{"type_zero", []store.Column{ts, col("x", 0)}, "bad type"},
		{"type_six", []store.Column{ts, col("x", 6)}, "bad type"},
		{"type_255", []store.Column{ts, col("x", 255)}, "bad type"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.NewSchema(tc.cols...)
			if err == nil {
				t.Fatalf("NewSchema succeeded with %v", s)
			}
			if !errors.Is(err, store.ErrSchema) {
				t.Errorf("error %v is not ErrSchema", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q does not mention %q", err, tc.want)
			}
			if !strings.HasPrefix(err.Error(), "store: ") {
				t.Errorf("error %q lacks the package prefix", err)
			}
		})
	}
}

func TestMustSchemaPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("MustSchema did not panic on a bad schema")
		}
	}()
	store.MustSchema(col("x", store.TypeI64))
}

func TestTickSchema(t *testing.T) {
	s := store.TickSchema()
	if s.RowSize != 32 || s.String() != "ts:ts,sym:sym,price:f64,size:i64" || s.SymCol != 1 {
		t.Errorf("TickSchema = %s, row %d, sym col %d", s, s.RowSize, s.SymCol)
	}
	if len(s.NewRow()) != 32 {
		t.Errorf("NewRow has %d bytes", len(s.NewRow()))
	}
	if _, ok := s.Col("nope"); ok || s.Index("nope") != -1 {
		t.Error("unknown column found")
	}
}

func TestSchemaMarshalRoundTrip(t *testing.T) {
	type rt struct {
		name string
		cols []store.Column
	}
	var cases []rt
	for _, tc := range layoutCases {
		cases = append(cases, rt{tc.name, tc.cols})
	}
	cases = append(cases, rt{"max_columns", maxSchema()},
		rt{"max_name_len", []store.Column{ts, col(strings.Repeat("z", store.MaxColNameLen), store.TypeBool)}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := store.MustSchema(tc.cols...)
			buf := make([]byte, s.SchemaBytes()+16)
			for i := range buf {
				buf[i] = 0xAA // MarshalSchema must write every byte it owns
			}
			s.MarshalSchema(buf)
			if buf[s.SchemaBytes()] != 0xAA {
				t.Error("MarshalSchema wrote past SchemaBytes")
			}
			got, err := store.UnmarshalSchema(buf[:s.SchemaBytes()])
			if err != nil {
				t.Fatalf("UnmarshalSchema: %v", err)
			}
			if !got.Equal(s) || got.RowSize != s.RowSize || got.SymCol != s.SymCol || got.String() != s.String() {
				t.Fatalf("round trip gave %s (row %d), want %s (row %d)", got, got.RowSize, s, s.RowSize)
			}
			for i := range s.Cols {
				if got.ColAt(i) != s.ColAt(i) {
					t.Errorf("column %d at %+v, want %+v", i, got.ColAt(i), s.ColAt(i))
				}
			}
		})
	}
}

func TestSchemaEqual(t *testing.T) {
	a := store.TickSchema()
	cases := []struct {
		name string
		b    *store.Schema
		want bool
	}{
		{"same", store.TickSchema(), true},
		{"fewer", store.MustSchema(ts, col("sym", store.TypeSym)), false},
		{"renamed", store.MustSchema(ts, col("sym", store.TypeSym), col("px", store.TypeF64), col("size", store.TypeI64)), false},
		{"retyped", store.MustSchema(ts, col("sym", store.TypeSym), col("price", store.TypeI64), col("size", store.TypeI64)), false},
		{"reordered", store.MustSchema(ts, col("sym", store.TypeSym), col("size", store.TypeI64), col("price", store.TypeF64)), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := a.Equal(tc.b); got != tc.want {
				t.Errorf("Equal = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestUnmarshalSchemaErrors(t *testing.T) {
	good := func() []byte {
		s := store.TickSchema()
		b := make([]byte, s.SchemaBytes())
		s.MarshalSchema(b)
		return b
	}
	cases := []struct {
		name   string
		mutate func([]byte) []byte
	}{
		{"empty", func(b []byte) []byte { return nil }},
		{"seven_bytes", func(b []byte) []byte { return b[:7] }},
		{"zero_columns", func(b []byte) []byte { b[0] = 0; return b }},
		{"sixty_one_columns", func(b []byte) []byte { b[0] = 61; return b }},
		{"count_past_area", func(b []byte) []byte { b[0] = 5; return b }},
		{"truncated_last_column", func(b []byte) []byte { return b[:len(b)-1] }},
		{"row_size_wrong", func(b []byte) []byte { b[4] = 40; return b }},
		{"offset_wrong", func(b []byte) []byte { b[8+2*64+58] = 16; return b }},
		{"type_unknown", func(b []byte) []byte { b[8+3*64+56] = 9; return b }},
		{"first_not_ts", func(b []byte) []byte { b[8] = 'x'; return b }},
		{"duplicate_after_nul_cut", func(b []byte) []byte { copy(b[8+3*64:], "price\x00junk"); return b }},
		{"empty_name", func(b []byte) []byte { b[8+2*64] = 0; return b }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, err := store.UnmarshalSchema(tc.mutate(good()))
			if err == nil {
				t.Fatalf("UnmarshalSchema accepted damaged bytes as %s", s)
			}
			if !errors.Is(err, store.ErrSchema) {
				t.Errorf("error %v is not ErrSchema", err)
			}
		})
	}
	t.Run("name_bytes_after_nul_ignored", func(t *testing.T) {
		b := good()
		copy(b[8+2*64:], "price\x00trailing")
		s, err := store.UnmarshalSchema(b)
		if err != nil || !s.Equal(store.TickSchema()) {
			t.Fatalf("UnmarshalSchema = %v, %v", s, err)
		}
	})
}

func TestParseColType(t *testing.T) {
	for _, ty := range []store.ColType{store.TypeTs, store.TypeSym, store.TypeF64, store.TypeI64, store.TypeBool} {
		t.Run(ty.String(), func(t *testing.T) {
			got, err := store.ParseColType(ty.String())
			if err != nil || got != ty {
				t.Errorf("ParseColType(%q) = %v, %v", ty.String(), got, err)
			}
		})
	}
	for _, s := range []string{"", "float", "F64", "string", "type(7)"} {
		t.Run("bad_"+s, func(t *testing.T) {
			if _, err := store.ParseColType(s); !errors.Is(err, store.ErrSchema) {
				t.Errorf("ParseColType(%q) error %v, want ErrSchema", s, err)
			}
		})
	}
	if got := store.ColType(9).String(); got != "type(9)" {
		t.Errorf("ColType(9).String() = %q", got)
	}
}
