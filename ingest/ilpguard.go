package ingest

import (
	"errors"
	"fmt"
	"net"
)

// ErrILPExposed is returned by Start when a token guards HTTP but the
// line-protocol TCP listener, which takes no token, would listen beyond
// loopback: anyone who reaches the port could write every table. Bind it
// to loopback, turn it off, or set Options.ILPInsecure to say that the
// network in front of it is trusted.
var ErrILPExposed = errors.New("ingest: the line-protocol TCP listener takes no token")

// checkILPExposure refuses a non-loopback TCP address when a token is
// set, unless insecure. An address with no host, or 0.0.0.0 / ::, listens
// on every interface.
func checkILPExposure(addr, token string, insecure bool) error {
	if token == "" || insecure || addr == "off" {
		return nil
	}
	tcp, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		return fmt.Errorf("ingest: ilp address %q: %w", addr, err)
	}
	if tcp.IP != nil && tcp.IP.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%w, and %s listens beyond loopback: with a token set, bind it to 127.0.0.1, turn it off (\"off\"), or accept writes from anyone who reaches it (--ilp-insecure)", ErrILPExposed, addr)
}
