package writer

import "encoding/binary"

func le64(b []byte) uint64       { return binary.LittleEndian.Uint64(b) }
func le32(b []byte) uint32       { return binary.LittleEndian.Uint32(b) }
func putLe64(b []byte, v uint64) { binary.LittleEndian.PutUint64(b, v) }
