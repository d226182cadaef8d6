// Package lineproto is tickdb's one line-protocol codec (the
// InfluxDB/QuestDB line protocol), both directions, for every part of
// tickdb that reads or writes it: Parser, the zero-allocation reader of
// lines into a Line (the listener and HTTP API of `tickdb serve`, and
// `tickdb ingest` through package load); Encoder, the one writer of lines
// (query's ilp output, and so `tickdb query`, `tail`, `bars` and `asof
// --format ilp`; the load generator of the benchmarks); and between them
// the one escaping rule of names and symbols and of quoted string values
// (AppendName, AppendQuoted, NameEscape, StringEscape and the
// AppendUnescaped functions) and the number spellings (ParseInt,
// ParseFloat). A rejected line is a *LineError (ErrBadLine) with a Reason,
// the one error type of a bad line for the readers above it too. It sits
// below query, ingest and load, which import it, and imports nothing of
// tickdb.
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
// Parser; docs/DESIGN.md ("Line protocol spelling") says what
// QuestDB and InfluxDB make of it.
//
// # Concurrency
//
// The functions are safe from any goroutine. An Encoder, a Parser and a
// Line are each for one goroutine; their zero values are ready to use. A
// Line's slices point into the parsed input and the Parser's scratch
// buffer, valid until the next Parse on that Parser.
//
// # Durability
//
// Nothing here touches files: it only appends bytes to caller's buffers.
//
// # Caveats
//
//   - Parse takes one line, without its '\n': splitting the input into
//     lines is the caller's (a line break inside a string value must be
//     escaped, and a QuestDB client's escaped raw break in a symbol is not
//     a line end; see ingest's lineEnd). It reads timestamps as integers in
//     the Parser's precision, and never stamps a line itself.
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
