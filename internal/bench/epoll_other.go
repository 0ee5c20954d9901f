//go:build !linux

package bench

import (
	"errors"
	"net"
)

// epollSupported says whether this system has the epoll reader.
const epollSupported = false

// errNoEpoll is the epoll reader asked for off Linux.
var errNoEpoll = errors.New("the epoll reader needs Linux")

// epollReaders stands in for the Linux epoll reader; resolveReader never
// picks it here.
type epollReaders struct{}

// newEpollReaders fails: there is no epoll here.
func newEpollReaders(*deliveries) (*epollReaders, error) { return nil, errNoEpoll }

// add closes conn and fails.
func (*epollReaders) add(conn net.Conn, _ []byte, _ int64, _ int) error {
	conn.Close()
	return errNoEpoll
}

// close does nothing.
func (*epollReaders) close() {}
