package query

// PipeAfter is the rows Run encodes itself before it starts a pipe.
const PipeAfter = pipeAfter
