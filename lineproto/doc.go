// Package lineproto holds the InfluxDB/QuestDB line protocol's spelling,
// in both directions, for every part of tickdb that reads or writes it:
// the escaping rule of names and symbols and of quoted string values
// (AppendName, AppendQuoted, and NameEscape, StringEscape and the
// AppendUnescaped functions that the parser in ingest uses), the number
// formats, and Encoder, the one writer of lines (query's ilp output, and so
// `tickdb query`, `tail`, `bars` and `asof --format ilp`;
// ingest.AppendLine; the load generator of the benchmarks). It sits below
// query and ingest, which both import it, and imports nothing of tickdb.
//
// # The escaping rule
//
// A line is measurement[,tag=value...] field=value[,field=value...] [ts].
// In a name (the measurement, a tag key, a tag value or a field key) the
// encoder writes a backslash before ',', ' ', '=' and '\', and a line break
// as two characters: LF as \n and CR as \r, so that no line it writes holds
// a raw line break (InfluxDB's line protocol cannot carry one in a tag or
// a key, and every line-oriented tool would split the line there). In a
// quoted string value it writes \" and \\, and LF and CR as \n and \r.
//
// The reader undoes exactly those escapes, plus the ones the clients of
// the two most used families write: a backslash before a raw CR or LF
// (the QuestDB clients' spelling of a line break in a symbol) stands for
// the break, and in a string \t stands for a tab (InfluxDB's encoder). A
// backslash before any other byte is kept, both bytes, as InfluxDB's
// decoder keeps it. So Encoder's output reads back byte for byte through
// ingest's parser; docs/DESIGN.md ("Line protocol spelling") says what
// QuestDB and InfluxDB make of it.
//
// # Concurrency
//
// The functions are safe from any goroutine. An Encoder is for one
// goroutine; its zero value is ready to use.
//
// # Durability
//
// Nothing here touches files: it only appends bytes to caller's buffers.
//
// # Caveats
//
//   - Names are not checked beyond what would make a line that reads back
//     differently (see Encoder): invalid UTF-8 and control bytes other than
//     CR and LF are written as they are (InfluxDB refuses a line with one in
//     a name; QuestDB and tickdb take it).
//   - A name ending in a backslash is written with it doubled; InfluxDB
//     cannot read such a name back (its own encoder refuses to write one).
//   - An InfluxDB client's symbol that itself holds \n or \r (backslash, then
//     the letter), or \\, \, \= or "\ " (InfluxDB escapes no backslash), reads
//     here as a line break or as the escaped byte: the one place where the
//     two client families' spellings cannot both be read exactly.
package lineproto
