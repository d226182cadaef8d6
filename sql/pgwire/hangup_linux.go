package pgwire

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// peerClosed says whether the client has shut its side of the socket: a
// zero-timeout poll for POLLRDHUP, which Linux raises when the peer's FIN
// arrives even while unread data is still queued (Postgres 14's
// client_connection_check_interval does the same).
func peerClosed(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	closed := false
	_ = rc.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		closed = err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	})
	return closed
}
