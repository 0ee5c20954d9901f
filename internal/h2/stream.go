package h2

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"time"

	"golang.org/x/net/http2"

	"github.com/listwatch/listwatch/internal/sockwrite"
)

// Stream is one request's stream. Its handler's ResponseWriter writes to
// it; once detached (Detacher), its owner does, one goroutine at a time,
// through Send, Flush, Close and Reset.
type Stream struct {
	c      *conn
	id     uint32
	ctx    context.Context // the request's: cancelled when the stream ends
	cancel context.CancelFunc
	body   *body

	// The writer's (the handler, then the detached stream's owner):
	pending    net.Buffers // data not yet framed: waits for a window or the socket
	pendingBuf net.Buffers // pending's array, kept between sends while small
	hdrs       []byte      // the DATA frame headers of a write
	vecs       net.Buffers // the pieces of a write
	written    int64       // body bytes sent

	// guarded by c.mu:
	sendWin     int64
	recvWin     int64 // what the client may still send on the stream
	recvUnacked int64
	remoteDone  bool // the client sent END_STREAM
	sentEnd     bool // we sent END_STREAM or RST_STREAM
	resetSent   bool // we sent RST_STREAM: the client's frames in flight are ignored
	ended       bool // over: finished, reset, or the connection gone
	running     bool // its handler has not returned (or waits to run)
	detached    bool
	gone        func() // a detached stream's: called once if the client ends it
	deadline    time.Time
	boundc      chan struct{} // closed by Bound
}

func (c *conn) newStream(id uint32, remoteDone bool) *Stream {
	ctx, cancel := context.WithCancel(c.ctx)
	st := &Stream{
		c: c, id: id, ctx: ctx, cancel: cancel,
		sendWin: c.peerWin, recvWin: streamRecvWindow, remoteDone: remoteDone, running: true,
		boundc: make(chan struct{}),
	}
	st.body = &body{st: st, readyc: make(chan struct{})}
	return st
}

// openLocked reports whether st counts against MaxConcurrentStreams,
// under c.mu: until both sides have ended it or one has reset it (RFC
// 9113 5.1).
func (st *Stream) openLocked() bool { return !st.ended && !(st.sentEnd && st.remoteDone) }

// closeLocked sets one of st's ends (&st.remoteDone, &st.sentEnd or
// &st.ended) under c.mu, counting the connection's open streams.
func (st *Stream) closeLocked(end *bool) {
	was := st.openLocked()
	*end = true
	if was && !st.openLocked() && st.c.streams[st.id] == st {
		st.c.open--
	}
}

// end makes the stream over, for err: its context cancelled, its body's
// reads failing, a detached stream's owner told (unless the owner ended
// it: byOwner).
func (st *Stream) end(err error, byOwner bool) {
	c := st.c
	c.mu.Lock()
	if st.ended {
		c.mu.Unlock()
		return
	}
	st.closeLocked(&st.ended)
	gone := st.gone
	if byOwner {
		gone = nil
	}
	c.windowGrewLocked() // a writer waiting for a window sees the end
	c.mu.Unlock()
	st.cancel()
	st.body.fail(err)
	st.release()
	if gone != nil {
		gone()
	}
}

// endSent ends a stream after its END_STREAM was sent, with err the
// send's error: then RST_STREAM(NO_ERROR) if the client has not ended its
// side, so that it stops sending, and the stream over (by its owner).
func (st *Stream) endSent(err error) error {
	c := st.c
	c.mu.Lock()
	open := !st.remoteDone && !st.ended
	if err == nil && open {
		st.resetSent = true
	}
	c.mu.Unlock()
	if err == nil && open {
		err = c.control(func() error { return c.wfr.WriteRSTStream(st.id, noError) })
	}
	st.end(ErrStreamClosed, true)
	return err
}

// release forgets an ended stream once its handler has returned, and
// closes a connection going away when it was the last.
func (st *Stream) release() {
	c := st.c
	c.mu.Lock()
	if !st.ended || st.running || c.streams[st.id] != st {
		c.mu.Unlock()
		return
	}
	delete(c.streams, st.id)
	idle := len(c.streams) == 0
	closing := c.goingAway && idle
	c.mu.Unlock()
	if idle {
		c.updateState()
	}
	if closing {
		c.closeWrite()
	}
}

// errNoWindow: a send window is empty; windowc is closed when one grows.
type errNoWindow struct{ windowc chan struct{} }

func (errNoWindow) Error() string { return "h2: no send window" }

// flush writes st.pending as DATA frames, with END_STREAM after the last
// byte if end. Non-blocking, it writes what the windows and the socket
// take now and returns errStalled if some is left (pending, or in the
// connection's rest: at most maxNonblockingWrite bytes are copied there;
// over TLS it copies into the write queue, and stalls when that is full);
// otherwise it waits for windows and the socket, until the stream's
// deadline if Bound set one.
func (st *Stream) flush(end, nonblocking bool) error {
	c := st.c
	for {
		if nonblocking {
			if !c.wmu.LockUnlessBlocking() {
				return errStalled
			}
		} else {
			c.lockWriter()
		}
		err := st.writeSome(end, nonblocking)
		c.wmu.Unlock()
		var nw errNoWindow
		switch {
		case err == nil && len(st.pending) == 0:
			return nil
		case errors.As(err, &nw):
			if nonblocking {
				return errStalled
			}
			if err := st.waitWindow(nw.windowc); err != nil {
				return err
			}
		case err != nil:
			return err
		}
	}
}

// maxNonblockingWrite bounds what one non-blocking write frames of
// pending, and over TLS what one write frames. What the socket does not
// take of a write is copied (the connection's rest; over TLS every write
// is copied into the write queue); the rest of pending stays in the
// caller's pieces, in place. Unbounded, a large send to a client that
// does not read was copied whole (32 MiB for a 32 MiB send). A socket
// that takes everything takes it in writes of this size: a few syscalls
// per MiB.
const maxNonblockingWrite = 256 << 10

// writeSome writes, under wmu, what the windows allow of pending (at
// most maxNonblockingWrite bytes if nonblocking or over TLS).
func (st *Stream) writeSome(end, nonblocking bool) error {
	c := st.c
	if c.werr != nil {
		return c.werr
	}
	switch {
	case !nonblocking:
	case len(c.rest) > 0:
		// The socket did not take the last write: try that alone, so that
		// a stalled connection's rest does not grow with every send.
		if err := st.commit(nil, true); err != nil {
			return err
		}
	case c.raw == nil && c.queueFull():
		return errStalled // the socket does not take the queue: pending waits
	}
	total := buffersLen(st.pending)
	c.mu.Lock()
	if st.ended || st.sentEnd {
		c.mu.Unlock()
		return ErrStreamClosed
	}
	allow := min(int64(total), st.sendWin, c.sendWin)
	if nonblocking || c.raw == nil { // the queue copies: a bounded piece at a time
		allow = min(allow, maxNonblockingWrite)
	}
	if total > 0 && allow <= 0 {
		wc := c.windowc
		c.mu.Unlock()
		if len(c.rest) > 0 || c.wbuf.Len() > 0 {
			if err := st.commit(nil, nonblocking); err != nil {
				return err
			}
		}
		return errNoWindow{wc}
	}
	st.sendWin -= allow
	c.sendWin -= allow
	frame := c.peerFrame
	deadline := st.deadline
	last := end && allow == int64(total)
	if last {
		st.closeLocked(&st.sentEnd)
	}
	c.mu.Unlock()
	var vecs net.Buffers // none: only what the connection has left to write
	if allow > 0 || last {
		st.frame(int(allow), frame, last)
		vecs = st.vecs
	}
	err := c.commit(vecs, nonblocking, deadline)
	sockwrite.Consume(&st.pending, int(allow))
	st.written += allow
	st.keepVecs()
	if errors.Is(err, errStalled) {
		c.restOwner.Store(st)
	}
	return err
}

// commit writes what the connection holds (rest, control frames) and data.
func (st *Stream) commit(data net.Buffers, nonblocking bool) error {
	c := st.c
	c.mu.Lock()
	deadline := st.deadline
	c.mu.Unlock()
	err := c.commit(data, nonblocking, deadline)
	if errors.Is(err, errStalled) {
		c.restOwner.Store(st)
	}
	return err
}

// frame lays out the first n bytes of pending as DATA frames of at most
// maxFrame bytes in st.vecs: each frame's header, then its pieces in place.
func (st *Stream) frame(n, maxFrame int, end bool) {
	frames := max(1, (n+maxFrame-1)/maxFrame)
	st.hdrs = slices.Grow(st.hdrs[:0], frames*frameHeaderLen)[:frames*frameHeaderLen]
	vecs := st.vecs[:0]
	pi, off := 0, 0 // the piece of pending, and the offset in it
	for f := range frames {
		size := min(maxFrame, n-f*maxFrame)
		h := st.hdrs[f*frameHeaderLen : (f+1)*frameHeaderLen]
		var flags http2.Flags
		if end && f == frames-1 {
			flags = http2.FlagDataEndStream
		}
		putFrameHeader(h, size, http2.FrameData, flags, st.id)
		vecs = append(vecs, h)
		for size > 0 {
			p := st.pending[pi][off:]
			take := min(len(p), size)
			if take > 0 {
				vecs = append(vecs, p[:take])
			}
			size -= take
			off += take
			if off == len(st.pending[pi]) {
				pi, off = pi+1, 0
			}
		}
	}
	st.vecs = vecs
}

func (st *Stream) keepVecs() {
	clear(st.vecs)
	st.vecs = sockwrite.Reuse(st.vecs)
	st.hdrs = sockwrite.Reuse(st.hdrs)
}

func putFrameHeader(h []byte, size int, t http2.FrameType, flags http2.Flags, id uint32) {
	h[0], h[1], h[2] = byte(size>>16), byte(size>>8), byte(size)
	h[3], h[4] = byte(t), byte(flags)
	h[5], h[6], h[7], h[8] = byte(id>>24)&0x7f, byte(id>>16), byte(id>>8), byte(id)
}

func buffersLen(b net.Buffers) int {
	n := 0
	for _, p := range b {
		n += len(p)
	}
	return n
}

// waitWindow waits until windowc is closed (a window grew, or the stream
// or the connection ended), or until the deadline once Bound set one. A
// client may hold a stream's window shut as long as it likes (it reads
// slowly): until Bound, the wait is bounded by the stream's life.
func (st *Stream) waitWindow(windowc chan struct{}) error {
	c := st.c
	c.mu.Lock()
	boundc, deadline := st.boundc, st.deadline
	c.mu.Unlock()
	var timeout <-chan time.Time
	if !deadline.IsZero() {
		t := time.NewTimer(time.Until(deadline))
		defer t.Stop()
		timeout, boundc = t.C, nil
	}
	select {
	case <-windowc:
		return nil
	case <-boundc:
		return nil // bound meanwhile: the caller tries again, then waits until the deadline
	case <-c.done:
		return errConnClosed
	case <-st.ctx.Done():
		return ErrStreamClosed
	case <-timeout:
		return fmt.Errorf("h2: waiting for the client's window: %w", os.ErrDeadlineExceeded)
	}
}
