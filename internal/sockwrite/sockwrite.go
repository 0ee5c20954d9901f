// Package sockwrite writes to a socket without waiting: one writev(2) of
// as much of a list of buffers as the socket takes at once. The watch
// senders use it so that no sender ever waits on a slow client; what the
// socket does not take is left for a goroutine that can wait.
package sockwrite

import (
	"cmp"
	"errors"
	"net"
	"slices"
	"syscall"
)

// ErrWouldBlock is a non-blocking write's: the socket takes no more now.
var ErrWouldBlock = errors.New("the write would block")

// Writer writes to one socket without waiting, through the net package's
// lock on its descriptor (syscall.RawConn.Write): the connection's close
// waits for a write, and a write after it fails without reaching the
// descriptor, which the system may have given to another connection. It
// allocates nothing per write (a closure handed to RawConn.Write would
// escape, one allocation a send). It is not safe for concurrent use.
type Writer struct {
	raw  syscall.RawConn
	fn   func(fd uintptr) bool // w.write, bound once
	bufs *net.Buffers          // during WriteNow
	err  error                 // write's, during WriteNow
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

// WriteNowKeep is WriteNow, and then appends what the socket did not take
// to keep (a fresh buffer if keep is nil, so that the rest may be among
// bufs), leaving bufs empty: for a caller that holds the rest in a buffer
// of its own until it can wait.
func (w *Writer) WriteNowKeep(keep []byte, bufs *net.Buffers) ([]byte, error) {
	err := w.WriteNow(bufs)
	left := 0
	for _, b := range *bufs {
		left += len(b)
	}
	keep = slices.Grow(keep, left)
	for _, b := range *bufs {
		keep = append(keep, b...)
	}
	clear(*bufs)
	*bufs = (*bufs)[:0]
	return keep, err
}

func (w *Writer) write(fd uintptr) bool {
	for len(*w.bufs) > 0 {
		n, err := Writev(fd, *w.bufs)
		Consume(w.bufs, n)
		if err != nil {
			w.err = err
			break
		}
	}
	return true // never wait for the socket: the caller hands the rest on
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
