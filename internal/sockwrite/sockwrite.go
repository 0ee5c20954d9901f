// Package sockwrite writes to a socket without waiting: one writev(2) of
// as much of a list of buffers as the socket takes at once. The watch
// senders use it so that no sender ever waits on a slow client; what the
// socket does not take is left for a goroutine that can wait.
package sockwrite

import (
	"cmp"
	"errors"
	"net"
	"syscall"
)

// ErrWouldBlock is a non-blocking write's: the socket takes no more now.
var ErrWouldBlock = errors.New("the write would block")

// Writer writes to one socket without waiting, through the net package's
// lock on its descriptor. It allocates nothing per write (a closure
// handed to syscall.RawConn.Write would escape, one allocation a send).
// It is not safe for concurrent use.
type Writer struct {
	raw  syscall.RawConn
	fn   func(fd uintptr) bool // w.write, bound once
	bufs *net.Buffers          // during WriteNow
	err  error                 // WriteFD's, during WriteNow
}

// NewWriter returns a Writer for raw's descriptor, or nil if raw is nil
// (a connection without one: every write would block).
func NewWriter(raw syscall.RawConn) *Writer {
	if raw == nil {
		return nil
	}
	w := &Writer{raw: raw}
	w.fn = w.write
	return w
}

// WriteNow writes as much of bufs as the socket takes without waiting,
// dropping what it wrote from bufs, and returns ErrWouldBlock if some is
// left. A nil Writer writes nothing.
func (w *Writer) WriteNow(bufs *net.Buffers) error {
	if w == nil {
		return ErrWouldBlock // no descriptor to try: a goroutine that can wait writes it
	}
	w.bufs, w.err = bufs, nil
	err := w.raw.Write(w.fn)
	w.bufs = nil
	return cmp.Or(err, w.err)
}

func (w *Writer) write(fd uintptr) bool {
	w.err = WriteFD(fd, w.bufs)
	return true // never wait for the socket: the caller hands the rest on
}

// WriteFD is Writer.WriteNow on the descriptor itself, without the net package's
// lock on it (and the poller state it resets): the caller must hold the
// descriptor open for the call, which it can only if it alone may close
// the connection. A watch sender saves the lock's and the poller's cache
// misses with it: 0.49 µs of the 12.5 µs a send cost in a profile of
// 1,000 watches x 50 writes/s.
func WriteFD(fd uintptr, bufs *net.Buffers) error {
	for len(*bufs) > 0 {
		n, err := Writev(fd, *bufs)
		Consume(bufs, n)
		if err != nil {
			return err
		}
	}
	return nil
}

// Consume drops the first n bytes of b.
func Consume(b *net.Buffers, n int) {
	for len(*b) > 0 && n >= len((*b)[0]) {
		n -= len((*b)[0])
		(*b)[0] = nil
		*b = (*b)[1:]
	}
	if n > 0 {
		(*b)[0] = (*b)[0][n:]
	}
}
