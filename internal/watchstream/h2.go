package watchstream

import (
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/internal/h2"
	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// A watch over HTTP/2 served by internal/h2 is detached like an HTTP/1.1
// one (detached.go): its handler returns, its stream stays open, and the
// senders write its events as DATA frames, the frame headers and the
// cache's shared bytes in one writev on a cleartext connection. The
// connection's one reader ends the watch when the client resets the
// stream or the connection ends. Over TLS a send's frames are copied into
// the connection's write queue, which a flusher writes with the frames of
// the other streams' sends queued meanwhile, in one tls.Conn.Write.

// streamSink is what a detached watch writes through: an HTTP/1.1
// connection or a WebSocket (connSink), or an HTTP/2 stream (h2Sink). Whoever serves the
// watch uses it; nothing else does, but boundWrites.
type streamSink interface {
	watchSink
	// flush writes what a non-blocking send left.
	flush() error
	// stalled reports whether some of the last send is not written.
	stalled() bool
	// setNonblocking makes sends and flushes take only what goes at once.
	setNonblocking(bool)
	// boundWrites bounds the writes left, at the stream's end; any goroutine.
	boundWrites()
	// abort ends the stream unfinished.
	abort()
	// bytesWritten is the body's size so far, for the access log.
	bytesWritten() int64

	// reader returns what reads the client's side of the watch's
	// connection, on a goroutine of its own from the watch's start, and
	// ends the watch when the client goes; nil if the transport's own
	// reader does (HTTP/2).
	reader(d *detachedWatch) func()
	// noReader says no reader will start (the server is closing): the
	// stream's end then closes the connection at once.
	noReader()
	// laneSink returns what the lane of d, the sink's watch, writes, if
	// its sends may be the lane's shared chunks as they are (nil: never).
	laneSink(d *detachedWatch) watchcache.LaneSink
	// queueControl queues a WebSocket's ping and pong (with its ping's
	// payload), sent ahead of the next events or by sendControl.
	queueControl(ping, pongDue bool, pong []byte)
	sendControl() error
	// goingAway makes a WebSocket's close frame say the server is going
	// away, unless the client's close set its status first.
	goingAway()
	// prefetch reads a field of each cache line a send reads first
	// (detachedWatch.Prefetch).
	prefetch() int64
}

var (
	_ streamSink = (*connSink)(nil)
	_ streamSink = (*h2Sink)(nil)
)

// h2Detacher returns w's HTTP/2 detacher, if w (or a writer it wraps) is
// internal/h2's.
func h2Detacher(w http.ResponseWriter) (h2.Detacher, bool) { return unwrapWriter[h2.Detacher](w) }

// unwrapWriter finds a T among w and the writers it wraps, as
// http.ResponseController looks for its interfaces.
func unwrapWriter[T any](w http.ResponseWriter) (T, bool) {
	for {
		if t, ok := w.(T); ok {
			return t, true
		}
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			var zero T
			return zero, false
		}
		w = u.Unwrap()
	}
}

// openDetached takes the watch's connection from net/http (HTTP/1.1) or
// its stream from its handler (HTTP/2).
func (s *Stream) openDetached() (streamSink, error) {
	if s.r.ProtoMajor == 2 {
		sink, err := s.detachH2()
		if err != nil {
			return nil, err
		}
		return sink, nil
	}
	sink, err := hijack(s.w, s.opts.ContentType, s.opts.WebSocket)
	if err != nil {
		return nil, err
	}
	return sink, nil
}

// detachH2 sends the response head and takes the stream from its handler;
// the client's reset or the connection's end ends the watch.
func (s *Stream) detachH2() (*h2Sink, error) {
	det, _ := h2Detacher(s.w)
	h := s.w.Header()
	h.Set("Content-Type", s.opts.ContentType)
	h.Set("Cache-Control", "no-cache, private")
	d := s.d
	st, err := det.Detach(func() { d.end(endGone) })
	if err != nil {
		return nil, fmt.Errorf("detaching an HTTP/2 watch: %w", err)
	}
	return &h2Sink{st: st}, nil
}

// h2Sink writes a watch's events on its HTTP/2 stream: everything pending
// in one send.
type h2Sink struct {
	st          *h2.Stream
	nonblocking bool
	vecs        [][]byte // the pieces of a send; kept between sends while small
}

func (s *h2Sink) send(e *encoder, items []watchcache.Item) error {
	vecs := s.vecs[:0]
	if f, ok := e.sharedFrame(items); ok {
		vecs = append(vecs, f.frame())
	} else {
		for _, it := range items {
			vecs = e.AppendFrame(vecs, it)
		}
	}
	err := s.st.Send(vecs, s.nonblocking) // keeps the pieces, not the slice
	clear(vecs)
	s.vecs = sockwrite.Reuse(vecs)
	if err != nil {
		return fmt.Errorf("writing watch events: %w", err)
	}
	return nil
}

func (s *h2Sink) flush() error {
	if err := s.st.Flush(s.nonblocking); err != nil {
		return fmt.Errorf("writing watch events: %w", err)
	}
	return nil
}

func (s *h2Sink) stalled() bool         { return s.st.Stalled() }
func (s *h2Sink) setNonblocking(b bool) { s.nonblocking = b }
func (s *h2Sink) boundWrites()          { s.st.Bound(EndWriteGrace) }
func (s *h2Sink) close()                { _ = s.st.Close() }
func (s *h2Sink) abort()                { s.st.Reset() }
func (s *h2Sink) bytesWritten() int64   { return s.st.Written() }

// An HTTP/2 stream's reader is its connection's; it has no lane and no
// control frames of its own (internal/h2 answers pings).
func (s *h2Sink) reader(*detachedWatch) func()                 { return nil }
func (s *h2Sink) noReader()                                    {}
func (s *h2Sink) laneSink(*detachedWatch) watchcache.LaneSink  { return nil }
func (s *h2Sink) queueControl(ping, pongDue bool, pong []byte) {}
func (s *h2Sink) sendControl() error                           { return nil }
func (s *h2Sink) goingAway()                                   {}
func (s *h2Sink) prefetch() int64                              { return 0 }
