package h2

import (
	"errors"
	"time"

	"github.com/listwatch/listwatch/internal/sockwrite"
)

// Detacher is implemented by the ResponseWriter this package gives
// handlers (found by type assertion, through wrappers that Unwrap).
type Detacher interface {
	// Detach sends the response head and anything written, and hands the
	// stream to the caller: the handler may return and the stream stays
	// open until the caller Closes or Resets it, or the client or the
	// connection ends it, which calls gone once (from the connection's
	// reader: it must not block). The ResponseWriter is not used after.
	Detach(gone func()) (*Stream, error)
}

func (w *responseWriter) Detach(gone func()) (*Stream, error) {
	if w.st == nil || w.detached {
		return nil, ErrStreamClosed
	}
	if w.status == 0 {
		w.WriteHeader(200)
	}
	if err := w.send(nil, false); err != nil {
		return nil, err
	}
	st := w.st
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.ended {
		return nil, ErrStreamClosed
	}
	st.detached, st.gone = true, gone
	w.detached = true
	return st, nil
}

// Send writes pieces as the stream's next DATA, in place (they must not
// change until the stream is no longer Stalled). Non-blocking, it writes
// what the windows and the socket take at once and leaves the rest
// (Stalled) for Flush: in the pieces, but for what the socket did not
// take of the last write (at most 256 KiB), which the connection copies;
// over TLS, what the windows allow is copied into the connection's write
// queue unless it is full (queue.go). Otherwise it waits, until the
// deadline Bound sets.
// Call it only when the stream is not Stalled.
func (st *Stream) Send(pieces [][]byte, nonblocking bool) error {
	if st.Stalled() {
		return errors.New("h2: Send on a stalled stream")
	}
	st.pending = append(st.pendingBuf[:0], pieces...)
	st.pendingBuf = sockwrite.Reuse(st.pending)
	return st.Flush(nonblocking)
}

// Flush writes what a non-blocking Send left: non-blocking, what goes at
// once; otherwise all of it.
func (st *Stream) Flush(nonblocking bool) error {
	err := st.flush(false, nonblocking)
	if errors.Is(err, errStalled) {
		return nil
	}
	return err
}

// Stalled reports whether some of the last Send is not written yet: a
// goroutine that can wait must Flush it.
func (st *Stream) Stalled() bool {
	return len(st.pending) > 0 || st.c.restOwner.Load() == st
}

// Bound makes every write and wait of the stream's end take at most
// grace from now, also one already waiting.
func (st *Stream) Bound(grace time.Duration) {
	c := st.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if st.deadline.IsZero() {
		st.deadline = time.Now().Add(grace)
		close(st.boundc)
	}
}

// Close ends the stream cleanly: what is pending, then END_STREAM.
func (st *Stream) Close() error { return st.endSent(st.flush(true, false)) }

// Reset ends the stream with RST_STREAM(CANCEL): the client sees it
// fail, not end.
func (st *Stream) Reset() {
	c := st.c
	c.mu.Lock()
	open := !st.ended
	if open {
		st.resetSent = true
	}
	c.mu.Unlock()
	if open {
		_ = c.control(func() error { return c.wfr.WriteRSTStream(st.id, cancelError) })
	}
	st.end(ErrStreamClosed, true)
}

// Written is how many body bytes the stream has sent.
func (st *Stream) Written() int64 { return st.written }
