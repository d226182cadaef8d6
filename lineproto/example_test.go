package lineproto_test

import (
	"fmt"
	"log"

	"github.com/tickdb/tickdb/lineproto"
)

// A Parser reads a line into a reusable Line; its names come back
// unescaped.
func ExampleParser() {
	var p lineproto.Parser
	var l lineproto.Line
	ok, err := p.Parse([]byte(`trades,sym=BRK\ B price=410.5,size=100i,buy=t 1700000000000000000`), &l)
	if err != nil || !ok {
		log.Fatal(ok, err)
	}
	fmt.Printf("table %s, ts %d\n", l.Measurement, l.Ts)
	for _, t := range l.Tags {
		fmt.Printf("tag %s = %q\n", t.Key, t.Value)
	}
	for _, f := range l.Fields {
		switch f.Kind {
		case lineproto.KindFloat:
			fmt.Printf("field %s = %v\n", f.Key, f.F)
		case lineproto.KindInt:
			fmt.Printf("field %s = %d\n", f.Key, f.I)
		case lineproto.KindBool:
			fmt.Printf("field %s = %v\n", f.Key, f.B)
		}
	}
	// Output:
	// table trades, ts 1700000000000000000
	// tag sym = "BRK B"
	// field price = 410.5
	// field size = 100
	// field buy = true
}

// An Encoder writes the lines a Parser reads back, escaping as the line
// protocol says.
func ExampleEncoder() {
	var e lineproto.Encoder[string]
	e.Begin(nil, "trades")
	e.Tag("sym", "BRK B")
	e.Float("price", 410.5)
	e.Int("size", 100)
	line, err := e.End(1_700_000_000_000_000_000)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Print(string(line))
	// Output:
	// trades,sym=BRK\ B price=410.5,size=100i 1700000000000000000
}
