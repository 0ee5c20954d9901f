package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/listwatch/listwatch/internal/watchcache"
)

// A watch over cleartext HTTP/1.1 is streamed on its hijacked connection by
// a goroutine of its own, and its handler returns. That does two things
// net/http cannot: each send is one writev of the chunk header, the shared
// event bytes and the chunk trailer (net/http copies a send twice and splits
// it at its 4 KiB connection buffer into several writes); and while the
// watch is idle it holds no buffers (net/http keeps 4 KiB read and write
// buffers, a 2 KiB response buffer and a deep connection goroutine per
// request). TLS connections and HTTP/2 streams stay with net/http: a
// tls.Conn would write every piece as its own record, and HTTP/2 cannot be
// hijacked.

// detachedStreams owns the goroutines of detached watches.
type detachedStreams struct {
	ctx    context.Context // ended by Server.Close: every detached watch ends
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	closed bool // guarded by mu: no goroutine starts once close has begun
}

// start runs fs, each in a goroutine of its own, unless close has begun.
func (d *detachedStreams) start(fs ...func()) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return false
	}
	for _, f := range fs {
		d.wg.Go(f)
	}
	return true
}

func newDetachedStreams() *detachedStreams {
	ctx, cancel := context.WithCancel(context.Background())
	return &detachedStreams{ctx: ctx, cancel: cancel}
}

// close ends the detached watches and waits for their goroutines: a
// stream writes its last bookmark and terminating chunk (within
// endWriteGrace) and closes its connection.
func (d *detachedStreams) close() {
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	d.cancel()
	d.wg.Wait()
}

// endWriteGrace bounds the writes at the end of a stream (the last
// bookmark, the terminating chunk), so that a client that stopped reading
// cannot hold up a timeout or a shutdown.
const endWriteGrace = 2 * time.Second

// canDetach reports whether a watch can be streamed on its hijacked
// connection: cleartext HTTP/1.1 (chunked), not a WebSocket upgrade.
func (q *request) canDetach() bool {
	return q.r.ProtoMajor == 1 && q.r.ProtoMinor == 1 && q.r.TLS == nil && !q.isWebSocket()
}

// detach streams watch w on the request's hijacked connection from a new
// goroutine until deadline; false means the connection cannot be hijacked
// and the caller streams through net/http.
func (q *request) detach(w *watchcache.Watcher, wr watchRequest, deadline time.Time, enc *watchEncoder) bool {
	sink, err := q.hijack(enc)
	if errors.Is(err, http.ErrNotSupported) {
		return false
	}
	if err != nil {
		w.Stop()
		q.s.log.Debug("watch connection lost at its start", "err", err)
		return true
	}
	s := q.s
	end := detachRequest(q.r)
	ctx, cancel := context.WithDeadline(s.streams.ctx, deadline)
	stopGrace := context.AfterFunc(ctx, sink.graceEnd)
	finish := func() {
		w.Stop()
		cancel()
		stopGrace()
		sink.close()
		end(http.StatusOK, sink.written)
	}
	counted := s.countEvents(sink, q.res)
	if !s.streams.start(sink.watchGone, func() { s.stream(ctx, w, wr, enc, counted); finish() }) {
		finish() // the server is closing: the stream ends at once
	}
	return true
}

// hijack takes the connection from net/http and writes the response head.
func (q *request) hijack(e *watchEncoder) (*connSink, error) {
	conn, _, err := http.NewResponseController(q.w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("hijacking a watch connection: %w", err)
	}
	h := q.w.Header().Clone()
	h.Set("Content-Type", e.contentType())
	h.Set("Cache-Control", "no-cache, private")
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	h.Set("Transfer-Encoding", "chunked")
	h.Set("Connection", "close") // taken from net/http, the connection ends with the stream
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 200 OK\r\n")
	_ = h.Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("writing a watch's response head: %w", err)
	}
	return &connSink{conn: conn, gonec: make(chan struct{})}, nil
}

// connSink writes a watch's events as HTTP/1.1 chunks on a hijacked
// connection: everything pending in one chunk and one writev, with the
// cache's shared object bytes written in place.
type connSink struct {
	conn    net.Conn
	vecs    [][]byte // the pieces of the send in progress; kept between sends while small
	head    [maxChunkHead]byte
	written int64         // bytes of the body, for the access log
	gonec   chan struct{} // closed when the client's side of the connection ends
}

// maxChunkHead is a chunk-size line's longest: 16 hex digits and CRLF.
const maxChunkHead = 18

// maxKeptVecs bounds the pieces slice an idle watcher keeps (3 per event):
// a burst's larger slice goes, so it neither holds memory nor event bytes.
const maxKeptVecs = 3 * 64

var (
	crlf          = []byte("\r\n")
	lastChunk     = []byte("0\r\n\r\n")
	errEmptyChunk = errors.New("a watch send encoded to no bytes")
)

func (s *connSink) send(e *watchEncoder, items []watchcache.Item) error {
	vecs := append(s.vecs[:0], nil) // the chunk header, once the size is known
	for _, it := range items {
		vecs = e.appendFrame(vecs, it)
	}
	n := 0
	for _, b := range vecs[1:] {
		n += len(b)
	}
	if n == 0 {
		return errEmptyChunk // a zero-size chunk would end the stream
	}
	vecs[0] = append(strconv.AppendInt(s.head[:0], int64(n), 16), crlf...)
	vecs = append(vecs, crlf)
	bufs := net.Buffers(vecs)
	_, err := bufs.WriteTo(s.conn)
	clear(vecs)
	if cap(vecs) <= maxKeptVecs {
		s.vecs = vecs[:0]
	} else {
		s.vecs = nil
	}
	if err != nil {
		return fmt.Errorf("writing watch events: %w", err)
	}
	s.written += int64(n)
	return nil
}

func (s *connSink) gone() <-chan struct{} { return s.gonec }

// watchGone reads the connection until the client closes it (or the
// stream's end does), discarding anything sent, as net/http's background
// read does while a handler runs.
func (s *connSink) watchGone() {
	defer close(s.gonec)
	buf := make([]byte, 64)
	for {
		if _, err := s.conn.Read(buf); err != nil {
			return
		}
	}
}

// graceEnd bounds the writes left once the stream's context has ended.
func (s *connSink) graceEnd() { _ = s.conn.SetWriteDeadline(time.Now().Add(endWriteGrace)) }

// close ends the body with the terminating chunk and closes the
// connection. The reader has drained what the client sent, so the close
// sends a FIN, not a reset that could lose the end of the stream.
func (s *connSink) close() {
	_, _ = s.conn.Write(lastChunk)
	_ = s.conn.Close()
}
