package reader

import "encoding/binary"

var le = binary.LittleEndian
