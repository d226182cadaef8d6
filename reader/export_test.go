package reader

// MapPartialForTest maps segment n as a partial view (a segment being
// written, read from its durable file), as a query does when it finds
// the segment unsealed, and reports whether the view is compressed.
func (r *Reader) MapPartialForTest(n uint64) (compressed bool, err error) {
	var v segView
	if err := r.mapDurable(&v, n, viewPartial); err != nil {
		return false, err
	}
	defer v.release()
	return v.kind == viewCompressed, nil
}
