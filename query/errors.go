package query

import "errors"

// ErrBadQuery is matched (errors.Is) by every error that blames the
// query's arguments rather than the table: a bad time, format or limit, a
// symbol filter on a table without a sym column. The HTTP API answers it
// with 400, the CLI with its usage error.
var ErrBadQuery = errors.New("query: bad argument")
