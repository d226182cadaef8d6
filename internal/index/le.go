package index

import "encoding/binary"

var le = binary.LittleEndian
