package watchstream

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"

	"github.com/listwatch/listwatch/internal/sockwrite"
)

// A watch over TLS HTTP/1.1 is detached like a cleartext one
// (detached.go), but a *tls.Conn cannot be written with writev, and it
// poisons itself on a write error, so its writes cannot simply fail with
// EAGAIN underneath it. Listener wraps the accepted TCP connections in a
// socketConn, whose Write the watch's sink switches, for the length of one
// send, to gathering: tls.Conn's records are written as far as the socket
// takes them at once, the rest goes to the socketConn's pending buffer, and
// Write reports success. The sink then flushes the pending bytes, only
// what the socket takes at once when it must not wait; the rest stays
// pending, the sink stalled, until the watch's own goroutine flushes it
// with blocking writes.

// Listener wraps ln's TCP connections so that the HTTP/1.1 watches of the
// TLS connections served on it can be detached. Serve TLS on it
// (http.Server.ServeTLS) with ConnContext as the http.Server's
// ConnContext; without them, TLS watches stay with net/http.
func Listener(ln net.Listener) net.Listener { return socketListener{ln} }

type socketListener struct{ net.Listener }

func (l socketListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, nil
	}
	raw, err := tc.SyscallConn()
	if err != nil {
		return c, nil // no descriptor: its watches stay with net/http
	}
	return &socketConn{Conn: tc, raw: sockwrite.NewWriter(raw), fd: -1}, nil
}

// socketKey marks the context of a connection whose TLS runs over a
// socketConn.
type socketKey struct{}

// ConnContext is the http.Server's ConnContext for a TLS listener over
// Listener: it marks the requests whose watches can be detached.
func ConnContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		if _, ok := tc.NetConn().(*socketConn); ok {
			return context.WithValue(ctx, socketKey{}, true)
		}
	}
	return ctx
}

// overSocketConn reports whether ctx is a request's on a TLS connection
// over a socketConn.
func overSocketConn(ctx context.Context) bool {
	ok, _ := ctx.Value(socketKey{}).(bool)
	return ok
}

// socketConn is an accepted TCP connection that a TLS connection runs
// over. Its Write is the connection's, except while a detached watch's
// sink gathers a send's records (gathering): then it writes what the
// socket takes at once and keeps the rest pending; before any other
// write, what a send left pending is written.
type socketConn struct {
	net.Conn
	raw *sockwrite.Writer // the descriptor's, for Dup

	// closing is set as Close begins; whoever holds mu then, or next,
	// closes fd (unlock): Close cannot wait for mu, which a blocked
	// write holds until the close fails it.
	closing atomic.Bool

	mu sync.Mutex // held across a write; tls.Conn's write lock is taken before it
	// guarded by mu:
	// fd is a descriptor of the socket of its own for non-blocking
	// writes (sockwrite.Writer.Dup, at the first: a detached watch's), -1
	// before and once closed: a write through it reaches this socket
	// whenever the connection closes, and reads none of the net package's
	// state (its descriptor lock and poller: 5% of the server's CPU in
	// cache misses at 1,000 TLS watches x 50 writes/s).
	fd        int
	gathering bool
	buf       []byte // buf[off:] is pending: written to the connection, not yet to the socket
	off       int
	vec       net.Buffers // what sockwrite is given: piece, which it consumes
	piece     [1][]byte   // vec's array, in place: no allocation per write
}

func (c *socketConn) Write(b []byte) (int, error) {
	c.mu.Lock()
	defer c.unlock()
	if c.gathering {
		c.gather(b)
		return len(b), nil
	}
	if err := c.flushLocked(false); err != nil {
		return 0, err
	}
	return c.Conn.Write(b)
}

// gather keeps b pending, after what is. With nothing pending, it first
// writes what the socket takes of b at once, and keeps only the rest: one
// copy of each record fewer (a record is most often a whole send). An
// error is left for flush, which meets it again.
func (c *socketConn) gather(b []byte) {
	if c.off < len(c.buf) || c.raw == nil {
		c.buf = append(c.buf, b...)
		return
	}
	c.vec = append(c.piece[:0], b)
	_ = c.writeOwn()
	for _, rest := range c.vec {
		c.buf = append(c.buf, rest...)
	}
	c.piece[0] = nil
}

// CloseWrite closes the socket's write side (a FIN), after the pending
// bytes.
func (c *socketConn) CloseWrite() error {
	c.mu.Lock()
	defer c.unlock()
	if err := c.flushLocked(false); err != nil {
		return err
	}
	return c.Conn.(*net.TCPConn).CloseWrite()
}

// setGathering switches Write to gathering (writing what the socket
// takes at once, keeping the rest pending, never failing), or back.
func (c *socketConn) setGathering(on bool) {
	c.mu.Lock()
	c.gathering = on
	c.unlock()
}

// stalled reports whether bytes are pending.
func (c *socketConn) stalled() bool {
	c.mu.Lock()
	defer c.unlock()
	return c.off < len(c.buf)
}

// flush ends a gathering (a send's records are all written), and writes
// the pending bytes: what the socket takes at once when nonblocking
// (errWouldBlock if some is left), all of them otherwise.
func (c *socketConn) flush(nonblocking bool) error {
	c.mu.Lock()
	defer c.unlock()
	c.gathering = false
	return c.flushLocked(nonblocking)
}

func (c *socketConn) flushLocked(nonblocking bool) error {
	if c.off == len(c.buf) {
		return nil
	}
	var err error
	if nonblocking {
		err = c.flushNow()
	} else {
		var n int
		n, err = c.Conn.Write(c.buf[c.off:])
		c.off += n
	}
	if c.off == len(c.buf) {
		c.off = 0
		c.buf = sockwrite.Reuse(c.buf)
	}
	return err
}

// flushNow writes, in place, as much of the pending bytes as the socket takes
// without waiting, and errWouldBlock if some are left.
func (c *socketConn) flushNow() error {
	c.vec = append(c.piece[:0], c.buf[c.off:])
	err := c.writeOwn()
	c.off = len(c.buf)
	if len(c.vec) > 0 {
		c.off -= len(c.vec[0])
	}
	c.piece[0] = nil
	return err
}

// writeOwn writes what the socket takes of c.vec at once, through fd,
// dropping it from c.vec, and errWouldBlock if some is left. mu held.
func (c *socketConn) writeOwn() error {
	if c.closing.Load() {
		return net.ErrClosed
	}
	if c.fd < 0 {
		fd, err := c.raw.Dup()
		if err != nil {
			// No descriptor to spare (EMFILE): the watch's own goroutine
			// writes it through the connection, as a lane's does.
			return errWouldBlock
		}
		c.fd = fd
	}
	n, err := sockwrite.Writev(uintptr(c.fd), c.vec)
	sockwrite.Consume(&c.vec, n)
	if err == nil && len(c.vec) > 0 {
		err = errWouldBlock
	}
	return err
}

// Close closes the connection, and fd unless a write holds mu: then the
// write's unlock closes it.
func (c *socketConn) Close() error {
	c.closing.Store(true)
	err := c.Conn.Close()
	if c.mu.TryLock() {
		c.unlock()
	}
	return err
}

// unlock releases mu, closing fd first if Close has begun. A Close that
// begins after the test, and finds mu held, has its fd closed by the
// test after the release: either here, or by whoever holds mu then, in
// its unlock.
func (c *socketConn) unlock() {
	c.closeOwnLocked()
	c.mu.Unlock()
	if c.closing.Load() && c.mu.TryLock() {
		c.closeOwnLocked()
		c.mu.Unlock()
	}
}

func (c *socketConn) closeOwnLocked() {
	if c.fd >= 0 && c.closing.Load() {
		_ = sockwrite.Close(c.fd)
		c.fd = -1
	}
}
