package watchstream

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// Config is what the engine needs from the server that starts watches,
// given once (New).
type Config struct {
	Log *slog.Logger
	// BookmarkInterval is how often a watch that asked for bookmarks is
	// sent one.
	BookmarkInterval time.Duration
	// NoLanes keeps every watch out of the lanes (lanes.go).
	NoLanes bool
	// Detach marks r as answered by the engine after its handler returns,
	// and returns what to call with the body's size when the stream ends:
	// the request's access log line, metrics and audit.
	Detach func(r *http.Request) (end func(written int64))
}

// Encoder turns a watch's items into their events' bytes: the server's,
// which knows the resource, its Tables, protobuf and metadata-only forms.
type Encoder interface {
	// AppendFrame appends the pieces of one event as a chunked stream
	// carries it: a JSON line (AppendJSONEvent), or a length-prefixed
	// protobuf WatchEvent.
	AppendFrame(vecs [][]byte, it watchcache.Item) [][]byte
}

// Options are one watch's, as its request negotiated them.
type Options struct {
	Encoder     Encoder
	ContentType string
	// Protobuf: the frames are length-prefixed protobuf WatchEvents
	// (binary WebSocket messages, without the prefix).
	Protobuf bool
	// Plain: the objects of object events are the cache's JSON as it is
	// (not a Table, not their metadata), so that the watch shares their
	// frames with every other such watch.
	Plain bool
	// Laneable: the watch may be served from a lane on a transport that
	// allows it (a plain JSON watch asking for no other form).
	Laneable  bool
	Bookmarks bool
	// WebSocket is the answer to the client's WebSocket upgrade, nil for
	// a chunked (or HTTP/2) stream.
	WebSocket *Upgrade
	// Metrics counts the events sent.
	Metrics *metrics.Resource
}

// Upgrade is a valid WebSocket handshake's answer.
type Upgrade struct {
	Accept   string // Sec-WebSocket-Accept
	Protocol string // the subprotocol chosen, if any
}

// Stream is one watch request's stream, between Open and Serve.
type Stream struct {
	e    *Engine
	w    http.ResponseWriter
	r    *http.Request
	opts Options
	d    *detachedWatch // nil: net/http streams it (serveHandler)
	lane bool
}

// Open prepares the stream of the watch request r, detached if its
// transport allows it.
func (e *Engine) Open(w http.ResponseWriter, r *http.Request, opts Options) *Stream {
	s := &Stream{e: e, w: w, r: r, opts: opts}
	if canDetach(w, r, opts.WebSocket != nil) {
		s.d = &detachedWatch{e: e}
		// A chunked HTTP/1.1 watch that detaches, in cleartext or over
		// TLS on a socketConn (canDetach), may be laned.
		s.lane = !e.cfg.NoLanes && opts.Laneable && r.ProtoMajor == 1 && opts.WebSocket == nil
	}
	return s
}

// WatchOptions sets what the stream's watcher needs of it: the Waker
// that serves a detached watch, and whether it may enter a lane.
func (s *Stream) WatchOptions(o *watchcache.WatchOptions) {
	if s.d != nil {
		o.Waker, o.Lane = s.d, s.lane
	}
}

// Serve streams w's items until deadline, the client's leaving, the
// engine's close or an error. A detached watch is served by the engine
// after Serve returns; another by Serve itself. An error means nothing
// was written: the caller answers it.
func (s *Stream) Serve(w *watchcache.Watcher, deadline time.Time) error {
	enc := &encoder{Encoder: s.opts.Encoder, protobuf: s.opts.Protobuf, plain: s.opts.Plain, frames: &s.e.frames}
	if s.d != nil {
		s.detach(w, deadline, enc)
		return nil // streamed on the hijacked connection by the senders (detached.go)
	}
	defer w.Stop()
	ctx, cancel := context.WithDeadline(s.r.Context(), deadline)
	defer cancel()
	flusher, ok := s.w.(http.Flusher)
	if !ok {
		return errNoFlush
	}
	h := s.w.Header()
	h.Set("Content-Type", s.opts.ContentType)
	h.Set("Cache-Control", "no-cache, private")
	s.w.WriteHeader(http.StatusOK)
	flusher.Flush()
	sink := countingSink{watchSink: &httpSink{w: s.w, flusher: flusher}, m: s.opts.Metrics}
	s.e.stream(ctx, w, s.opts.Bookmarks, enc, sink)
	return nil
}

// stream sends the watcher's items until the watch ends: its timeout (with
// a last bookmark), the client going away, the engine closing, or an
// error (sent as an ERROR event).
func (e *Engine) stream(ctx context.Context, w *watchcache.Watcher, withBookmarks bool, enc *encoder, sink watchSink) {
	var bookmarks <-chan time.Time // only watches that asked for bookmarks pay for a ticker
	if withBookmarks {
		t := time.NewTicker(e.cfg.BookmarkInterval)
		defer t.Stop()
		bookmarks = t.C
	}
	var items []watchcache.Item
	for {
		var err error
		items, err = w.Pending(ctx, items[:0])
		if len(items) > 0 {
			if sink.send(enc, items) != nil {
				return
			}
			continue
		}
		if err != nil {
			endStream(ctx, err, enc, sink)
			return
		}
		select {
		case <-w.Ready():
		case <-bookmarks:
			if rev, ok := w.Bookmark(); ok && sink.send(enc, []watchcache.Item{{Type: api.Bookmark, Rev: rev}}) != nil {
				return
			}
		case <-ctx.Done():
			if withBookmarks && errors.Is(ctx.Err(), context.DeadlineExceeded) {
				if rev, ok := w.Bookmark(); ok {
					_ = sink.send(enc, []watchcache.Item{{Type: api.Bookmark, Rev: rev}})
				}
			}
			return
		case <-e.ctx.Done():
			return
		}
	}
}

// endStream sends a Status error as the stream's last event; other errors
// (the cache closing, the client leaving) just end it.
func endStream(ctx context.Context, err error, enc *encoder, sink watchSink) {
	var se *api.StatusError
	if errors.As(err, &se) && ctx.Err() == nil {
		_ = sink.send(enc, []watchcache.Item{{Type: api.Error, Status: &se.Status}})
	}
}

// encoder is a watch's Encoder with what the engine adds: the frames
// that plain JSON watches share.
type encoder struct {
	Encoder
	protobuf bool
	plain    bool
	frames   *lastFrame // the engine's
}

var (
	framePrefix = map[string][]byte{}
	frameSuffix = []byte("}\n")
)

func init() {
	for _, t := range []string{api.Added, api.Modified, api.Deleted, api.Bookmark, api.Error} {
		framePrefix[t] = []byte(`{"type":"` + t + `","object":`)
	}
}

// AppendJSONEvent appends the pieces of a JSON watch event's line, the
// object's bytes in place.
func AppendJSONEvent(vecs [][]byte, typ string, object []byte) [][]byte {
	return append(vecs, framePrefix[typ], object, frameSuffix)
}

// watchSink is where a watch's events go: a chunked (or HTTP/2) response,
// or a WebSocket.
type watchSink interface {
	send(e *encoder, items []watchcache.Item) error
	close()
}

// countingSink counts the events a watch sends.
type countingSink struct {
	watchSink
	m *metrics.Resource
}

func (c countingSink) send(e *encoder, items []watchcache.Item) error {
	if err := c.watchSink.send(e, items); err != nil {
		return err
	}
	for _, it := range items {
		c.m.WatchEvent(len(it.Object))
	}
	return nil
}

type errString string

func (e errString) Error() string { return string(e) }

const errNoFlush = errString("the response writer cannot stream")

// httpSink writes events to a streamed response: everything pending in one
// write and one flush.
type httpSink struct {
	w       http.ResponseWriter
	flusher http.Flusher
	buf     bytes.Buffer
}

func (s *httpSink) send(e *encoder, items []watchcache.Item) error {
	s.buf.Reset()
	var pieces [3][]byte
	for _, it := range items {
		for _, b := range e.AppendFrame(pieces[:0], it) {
			s.buf.Write(b)
		}
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	s.flusher.Flush()
	return nil
}

func (s *httpSink) close() {}
