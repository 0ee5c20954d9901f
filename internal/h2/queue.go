package h2

import (
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// The write queue of a connection without a descriptor (TLS). A writer
// under wmu copies what it frames into the queue (conn.out), and one
// flusher goroutine at a time writes the queue, a record's worth per
// write: the frames of every send made while the last write was on the
// socket go out together, in full TLS records and a syscall each, not in
// a record and a syscall per stream's send. With a thousand watches on
// one connection, a sweep of the senders' sends was a thousand
// tls.Conn.Writes.
//
// No writer waits on the socket: a write is copied, and the flusher,
// started if none runs, writes it. A write that may wait waits only when
// the queue holds maxQueued bytes or more unwritten, until it holds less
// (it holds wmu meanwhile, blocking (writeLock.startBlocking), as a blocking write on a
// cleartext connection does); a non-blocking one then stalls. The queue
// keeps the order in which writers framed under wmu, so that frames go
// out in that order (HPACK's state, SETTINGS' ACK before the DATA it let
// through). A write error is met by the next write, and ends the
// connection at once (the flusher closes it).

// maxQueued bounds the bytes a connection's queue holds unwritten before
// a writer waits (or a non-blocking one stalls): as much as the kernel's
// send buffer of a TCP connection may hold (tcp_wmem's default maximum),
// and a sweep of about 3,000 watches' 1 KiB events, which the flusher
// writes as they are queued, so that the bound is met only when the
// socket does not take the bytes. (At 1 MiB, a sweep of 1,000 watches
// met it whenever the flusher was not given a core at once.)
const maxQueued = 4 << 20

// queueChunk is the size of the queue's buffers: a TLS record's most
// plaintext, so that the flusher writes each in one record and one write.
// Buffers of a fixed size, shared by the connections (chunkPool), are
// never copied as the queue grows; one buffer grown by append was (a
// sixth of the server's CPU in the 1,000 watch fan-out).
const queueChunk = 16 << 10

var chunkPool = sync.Pool{New: func() any {
	b := make([]byte, 0, queueChunk)
	return &b
}}

// writeQueued puts vecs in the queue (copied) and starts a flusher if
// none runs. Unless nonblocking, it then waits while the queue holds
// maxQueued bytes or more unwritten, until deadline (else writeTimeout).
func (c *conn) writeQueued(vecs net.Buffers, nonblocking bool, deadline time.Time) error {
	c.qmu.Lock()
	if err := c.queueErrLocked(); err != nil {
		c.qmu.Unlock()
		return err
	}
	for _, b := range vecs {
		c.appendOutLocked(b)
	}
	if !c.flushing && len(c.out) > 0 {
		c.flushing = true
		c.flushers.Go(c.flushQueue)
	}
	room := c.queued - maxQueued + 1 // written at least this: room for more
	c.qmu.Unlock()
	if nonblocking {
		return nil
	}
	return c.awaitWritten(room, deadline)
}

// queueErrLocked is the error a writer meets: the flusher's, or the
// connection's end.
func (c *conn) queueErrLocked() error {
	switch {
	case c.qerr != nil:
		return c.qerr
	case c.qclosed:
		return errConnClosed
	}
	return nil
}

// queueFull reports whether maxQueued bytes or more wait in the queue.
func (c *conn) queueFull() bool {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	return c.queued-c.written >= maxQueued
}

// flushQueue writes the queue until it is empty, each write bounded by
// writeTimeout: the flusher, started with flushing set.
func (c *conn) flushQueue() {
	c.qmu.Lock()
	defer c.qmu.Unlock()
	for len(c.out) > 0 && c.qerr == nil {
		bufs := c.out
		c.out, c.spare = c.spare[:0], nil
		c.qmu.Unlock()
		n, err := c.writeOut(bufs)
		c.qmu.Lock()
		c.written += n
		c.spare = bufs[:0]
		if err != nil {
			c.qerr = err
		}
		close(c.writtenc)
		c.writtenc = make(chan struct{})
	}
	c.flushing = false
}

// appendOutLocked copies b to the end of the queue, under qmu.
func (c *conn) appendOutLocked(b []byte) {
	c.queued += int64(len(b))
	for len(b) > 0 {
		if n := len(c.out); n == 0 || len(*c.out[n-1]) == queueChunk {
			c.out = append(c.out, chunkPool.Get().(*[]byte))
		}
		last := c.out[len(c.out)-1]
		k := min(len(b), queueChunk-len(*last))
		*last = append(*last, b[:k]...)
		b = b[k:]
	}
}

// writeOut writes bufs, the flusher's, and gives them back to chunkPool;
// it returns how many bytes were written. A write error ends the
// connection.
func (c *conn) writeOut(bufs []*[]byte) (int64, error) {
	err := c.nc.SetWriteDeadline(time.Now().Add(writeTimeout))
	var n int64
	for i, b := range bufs {
		if err == nil {
			_, err = c.nc.Write(*b)
		}
		if err == nil {
			n += int64(len(*b))
		}
		*b = (*b)[:0]
		chunkPool.Put(b)
		bufs[i] = nil
	}
	if err != nil {
		_ = c.nc.Close() // the reader ends, and with it the streams
		return n, fmt.Errorf("h2: writing: %w", err)
	}
	return n, nil
}

// awaitWritten waits until the queue's bytes before end are written, the
// flusher fails, or deadline (else writeTimeout), blocking.
func (c *conn) awaitWritten(end int64, deadline time.Time) error {
	var timeout <-chan time.Time
	for {
		c.qmu.Lock()
		done, err, writtenc := c.written >= end, c.qerr, c.writtenc
		c.qmu.Unlock()
		switch {
		case done:
			return nil
		case err != nil:
			return err
		}
		if timeout == nil {
			if deadline.IsZero() {
				deadline = time.Now().Add(writeTimeout)
			}
			t := time.NewTimer(time.Until(deadline))
			defer t.Stop()
			timeout = t.C
			if c.wmu.startBlocking() { // unless the caller (closeWriteNow) did
				defer c.wmu.stopBlocking()
			}
		}
		select {
		case <-writtenc:
		case <-timeout:
			return fmt.Errorf("h2: writing: %w", os.ErrDeadlineExceeded)
		}
	}
}

// drainQueue waits until everything queued is written, or writeTimeout.
func (c *conn) drainQueue() error {
	c.qmu.Lock()
	end := c.queued
	c.qmu.Unlock()
	return c.awaitWritten(end, time.Time{})
}

// closeQueue stops flushers from starting, at the connection's end, and
// waits for the running one (the connection closed: its write fails).
func (c *conn) closeQueue() {
	c.qmu.Lock()
	c.qclosed = true
	c.qmu.Unlock()
	c.flushers.Wait()
}
