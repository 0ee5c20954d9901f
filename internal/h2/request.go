package h2

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// onHeaders starts a request, or reads a request's trailers.
func (c *conn) onHeaders(f *http2.MetaHeadersFrame) error {
	id := f.StreamID
	if id%2 == 0 {
		return connError{protocolError, "HEADERS on an even stream"}
	}
	if id <= c.maxSeen.Load() {
		return c.onTrailers(f)
	}
	c.maxSeen.Store(id)
	if f.HasPriority() && f.Priority.StreamDep == id {
		return c.resetForClient(id, protocolError)
	}
	if f.Truncated {
		return c.control(func() error { return c.writeHeadersLocked(id, http.StatusRequestHeaderFieldsTooLarge, nil, true) })
	}
	c.mu.Lock()
	refused := c.refuseLocked()
	c.mu.Unlock()
	if refused {
		return c.resetForClient(id, refusedStream)
	}
	st := c.newStream(id, f.StreamEnded())
	req, err := c.newRequest(f, st)
	if err != nil {
		st.cancel()
		c.srv.logger().Debug("h2: malformed request", "stream", id, "err", err)
		return c.resetForClient(id, protocolError)
	}
	limit := int(c.srv.maxStreams())
	c.mu.Lock()
	start := c.running < limit
	if !start && len(c.waiting) >= maxWaiting(limit) {
		c.mu.Unlock()
		st.cancel()
		return connError{calmError, "too many requests waiting for the handlers of reset streams"}
	}
	c.streams[id] = st
	if st.openLocked() {
		c.open++
	}
	if start {
		c.running++
	} else {
		c.waiting = append(c.waiting, waitingHandler{st, req})
	}
	first := len(c.streams) == 1
	c.mu.Unlock()
	if first {
		c.updateState()
	}
	if st.remoteDone {
		st.body.finish()
	}
	if start {
		c.startHandler(st, req)
	}
	return nil
}

// maxWaiting bounds the requests waiting for a handler to return, as
// x/net's server does (4 times MaxConcurrentStreams): they wait only
// while the handlers of streams closed early (reset, or answered and
// ended before they return) still run.
func maxWaiting(limit int) int { return 4 * limit }

// waitingHandler is a request whose handler waits for another to return.
type waitingHandler struct {
	st  *Stream
	req *http.Request
}

func (c *conn) startHandler(st *Stream, req *http.Request) {
	c.handlers.Add(1)
	go c.runHandler(st, req)
}

// onTrailers reads a request's trailers (dropped): they end its body.
func (c *conn) onTrailers(f *http2.MetaHeadersFrame) error {
	c.mu.Lock()
	st := c.streams[f.StreamID]
	open := st != nil && !st.remoteDone && !st.ended
	if open {
		st.closeLocked(&st.remoteDone)
	}
	c.mu.Unlock()
	switch {
	case st == nil && f.StreamID < c.maxSeen.Load():
		// Never opened (skipped), or over and forgotten: either way it
		// would open a stream below the highest (RFC 9113 5.1.1).
		return connError{protocolError, "HEADERS on a stream below the highest seen"}
	case !open:
		return connError{streamClosed, "HEADERS on a closed stream"}
	case !f.StreamEnded():
		return connError{protocolError, "trailers without END_STREAM"}
	case len(f.PseudoFields()) > 0: // malformed (RFC 9113 8.1)
		return c.resetForClient(f.StreamID, protocolError)
	}
	if err := st.body.finish(); err != nil { // shorter than its content-length
		return c.resetForClient(f.StreamID, protocolError) // the handler's Read fails
	}
	return nil
}

// connectionHeaders are HTTP/1 connection-specific fields, malformed in
// HTTP/2 (RFC 9113 8.2.2).
var connectionHeaders = map[string]bool{
	"connection": true, "proxy-connection": true, "keep-alive": true,
	"transfer-encoding": true, "upgrade": true,
}

// newRequest makes a request from its HEADERS, validated as RFC 9113
// 8.3.1 asks.
func (c *conn) newRequest(f *http2.MetaHeadersFrame, st *Stream) (*http.Request, error) {
	method, path, scheme, authority := f.PseudoValue("method"), f.PseudoValue("path"), f.PseudoValue("scheme"), f.PseudoValue("authority")
	for _, hf := range f.PseudoFields() {
		switch hf.Name {
		case ":method", ":path", ":scheme", ":authority":
		default:
			return nil, fmt.Errorf("pseudo-header %s in a request", hf.Name)
		}
	}
	switch {
	case method == http.MethodConnect && (path != "" || scheme != ""):
		return nil, errors.New("CONNECT with :path or :scheme") // RFC 9113 8.5
	case method == "" || (method != http.MethodConnect && (path == "" || scheme == "")):
		return nil, errors.New("missing pseudo-headers")
	}
	header, err := requestHeader(f.RegularFields())
	if err != nil {
		return nil, err
	}
	u, err := requestURL(method, path, authority)
	if err != nil {
		return nil, err
	}
	if authority == "" {
		authority = header.Get("Host")
	}
	cl, err := contentLength(header, st.remoteDone)
	if err != nil {
		return nil, err
	}
	st.body.want = cl
	req := &http.Request{
		Method: method, URL: u, Proto: "HTTP/2.0", ProtoMajor: 2, Header: header,
		Host: authority, RequestURI: path, RemoteAddr: c.nc.RemoteAddr().String(),
		TLS: c.tls, ContentLength: cl, Body: st.body,
	}
	if st.remoteDone {
		req.Body = http.NoBody
	}
	return req.WithContext(st.ctx), nil
}

func requestHeader(fields []hpack.HeaderField) (http.Header, error) {
	header := make(http.Header, len(fields))
	var cookies []string
	for _, hf := range fields {
		switch {
		case connectionHeaders[hf.Name]:
			return nil, fmt.Errorf("connection-specific header %s", hf.Name)
		case hf.Name == "te" && hf.Value != "trailers":
			return nil, errors.New("te other than trailers")
		case hf.Name == "cookie":
			cookies = append(cookies, hf.Value) // joined, RFC 9113 8.2.3
			continue
		}
		k := http.CanonicalHeaderKey(hf.Name)
		header[k] = append(header[k], hf.Value)
	}
	if len(cookies) > 0 {
		header.Set("Cookie", strings.Join(cookies, "; "))
	}
	return header, nil
}

func requestURL(method, path, authority string) (*url.URL, error) {
	switch {
	case method == http.MethodConnect: // without :path (newRequest)
		if authority == "" {
			return nil, errors.New("CONNECT without :authority")
		}
		return &url.URL{Host: authority}, nil
	case path == "*" && method == http.MethodOptions:
		return &url.URL{Path: "*"}, nil
	case !strings.HasPrefix(path, "/"):
		return nil, fmt.Errorf("path %q", path)
	}
	u, err := url.ParseRequestURI(path)
	if err != nil {
		return nil, fmt.Errorf("path: %w", err)
	}
	return u, nil
}

// contentLength is the request's announced body length, -1 if unknown.
func contentLength(h http.Header, noBody bool) (int64, error) {
	v := h.Values("Content-Length")
	if len(v) == 0 {
		if noBody {
			return 0, nil
		}
		return -1, nil
	}
	n, err := strconv.ParseInt(v[0], 10, 64)
	if err != nil || n < 0 || len(v) > 1 && slicesDiffer(v) {
		return 0, errors.New("invalid content-length")
	}
	if noBody && n != 0 {
		return 0, errors.New("content-length without a body")
	}
	return n, nil
}

func slicesDiffer(v []string) bool {
	for _, s := range v[1:] {
		if s != v[0] {
			return true
		}
	}
	return false
}

// runHandler serves one request and ends its response, unless the handler
// detached it.
func (c *conn) runHandler(st *Stream, req *http.Request) {
	defer c.handlers.Done()
	rw := &responseWriter{st: st, req: req, header: http.Header{}}
	defer func() {
		if p := recover(); p != nil {
			if p != http.ErrAbortHandler {
				c.srv.logger().Error("h2: handler panic", "panic", p, "stack", string(debug.Stack()))
			}
			c.resetStream(st.id, internalError)
		} else {
			rw.finish()
		}
		rw.st = nil
		st.handlerReturned()
	}()
	c.handler.ServeHTTP(rw, req)
}

// handlerReturned drops what the request body holds, forgets the stream
// if it is over, and starts the handler waiting first, if any.
func (st *Stream) handlerReturned() {
	c := st.c
	c.mu.Lock()
	c.running--
	next, skipped := c.nextWaitingLocked()
	c.mu.Unlock()
	st.handlerDone()
	for _, w := range skipped {
		w.handlerDone()
	}
	if next.st != nil {
		c.startHandler(next.st, next.req)
	}
}

// handlerDone drops what the request body holds and forgets the stream if
// it is over: its handler has returned, or will never run.
func (st *Stream) handlerDone() {
	st.body.Close()
	c := st.c
	c.mu.Lock()
	st.running = false
	c.mu.Unlock()
	st.release()
}

// nextWaitingLocked takes, under c.mu, the first waiting request whose
// stream has not ended, counted as running, and those before it whose
// streams have ended: their handlers will never run.
func (c *conn) nextWaitingLocked() (next waitingHandler, skipped []*Stream) {
	for len(c.waiting) > 0 {
		w := c.waiting[0]
		c.waiting[0] = waitingHandler{}
		c.waiting = c.waiting[1:]
		if !w.st.ended {
			c.running++
			return w, skipped
		}
		skipped = append(skipped, w.st)
	}
	c.waiting = nil // its array's slots are spent
	return waitingHandler{}, skipped
}

// onData adds a DATA frame to its request's body.
func (c *conn) onData(f *http2.DataFrame) error {
	size := int64(f.Length) // flow control counts the padding too
	c.mu.Lock()
	c.recvWin -= size
	if c.recvWin < 0 {
		c.mu.Unlock()
		return connError{flowError, "DATA beyond the connection window"}
	}
	st := c.streams[f.StreamID]
	open := st != nil && !st.ended && !st.remoteDone
	if open {
		st.recvWin -= size
	}
	ignore := st != nil && st.resetSent
	c.mu.Unlock()
	switch {
	case f.StreamID > c.maxSeen.Load():
		return connError{protocolError, "DATA on an idle stream"}
	case ignore: // sent before our RST_STREAM reached the client (RFC 9113 5.1)
		c.grant(nil, size)
		return nil
	case !open && st == nil: // over and forgotten: no handler to free
		c.grant(nil, size)
		return c.control(func() error { return c.wfr.WriteRSTStream(f.StreamID, streamClosed) })
	case !open:
		c.grant(nil, size)
		return c.resetForClient(f.StreamID, streamClosed)
	case st.recvWinNegative():
		c.grant(nil, size)
		return c.resetForClient(f.StreamID, flowError)
	}
	if pad := size - int64(len(f.Data())); pad > 0 {
		c.grant(st, pad)
	}
	kept, err := st.body.write(f.Data())
	if !kept {
		c.grant(nil, int64(len(f.Data()))) // nobody reads it
	}
	if err != nil {
		return c.resetForClient(f.StreamID, protocolError)
	}
	if f.StreamEnded() {
		c.mu.Lock()
		st.closeLocked(&st.remoteDone)
		c.mu.Unlock()
		if err := st.body.finish(); err != nil {
			return c.resetForClient(f.StreamID, protocolError)
		}
	}
	return nil
}

func (st *Stream) recvWinNegative() bool {
	st.c.mu.Lock()
	defer st.c.mu.Unlock()
	return st.recvWin < 0
}

// grant gives n bytes of receive window back, to the connection and (if
// st is open for the client) to st, in WINDOW_UPDATEs of at least
// windowUpdateMin.
func (c *conn) grant(st *Stream, n int64) {
	c.mu.Lock()
	c.recvUnacked += n
	connInc := c.recvUnacked
	if connInc < windowUpdateMin {
		connInc = 0
	}
	c.recvUnacked -= connInc
	c.recvWin += connInc
	var streamInc int64
	if st != nil && !st.remoteDone && !st.ended {
		st.recvUnacked += n
		if st.recvUnacked >= windowUpdateMin || st.recvWin <= 0 {
			streamInc = st.recvUnacked
		}
		st.recvUnacked -= streamInc
		st.recvWin += streamInc
	}
	c.mu.Unlock()
	if connInc == 0 && streamInc == 0 {
		return
	}
	_ = c.control(func() error {
		var err error
		if connInc > 0 {
			err = c.wfr.WriteWindowUpdate(0, uint32(connInc))
		}
		if streamInc > 0 {
			err = errors.Join(err, c.wfr.WriteWindowUpdate(st.id, uint32(streamInc)))
		}
		return err
	})
}

// body is a request's body: the DATA the client sent, buffered up to the
// stream's receive window, read by the handler.
type body struct {
	st *Stream

	mu sync.Mutex // a leaf
	// guarded by mu:
	buf    []byte // unread
	err    error  // io.EOF at the end, or why the stream ended
	closed bool   // the handler closed it, or returned
	want   int64  // Content-Length, -1 unknown
	got    int64
	readyc chan struct{} // closed and replaced when data or the end arrives
	// deadline, if set, fails a read that would wait beyond it; timer
	// wakes the waiting reads then.
	deadline time.Time
	timer    *time.Timer
}

func (b *body) signalLocked() {
	close(b.readyc)
	b.readyc = make(chan struct{})
}

// write appends DATA, unless nobody will read it (kept false); too much
// for the announced length is an error.
func (b *body) write(p []byte) (kept bool, err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.got += int64(len(p))
	if b.want >= 0 && b.got > b.want {
		return false, errors.New("more body than its content-length")
	}
	if b.closed || b.err != nil {
		return false, nil
	}
	b.buf = append(b.buf, p...)
	b.signalLocked()
	return true, nil
}

// finish is END_STREAM: an error if the body is shorter than announced.
func (b *body) finish() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.want > 0 && b.got != b.want {
		return errors.New("less body than its content-length")
	}
	if b.err == nil {
		b.err = io.EOF
		b.signalLocked()
	}
	return nil
}

// fail ends reads with err, unless the body was read to its end.
func (b *body) fail(err error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.err == nil {
		b.err = err
		b.signalLocked()
	}
}

func (b *body) Read(p []byte) (int, error) {
	for {
		b.mu.Lock()
		if b.closed {
			b.mu.Unlock()
			return 0, http.ErrBodyReadAfterClose
		}
		if len(b.buf) > 0 {
			n := copy(p, b.buf)
			b.buf = b.buf[n:]
			if len(b.buf) == 0 {
				b.buf = nil
			}
			b.mu.Unlock()
			b.st.c.grant(b.st, int64(n))
			return n, nil
		}
		if b.err != nil {
			err := b.err
			b.mu.Unlock()
			return 0, err
		}
		if !b.deadline.IsZero() && !time.Now().Before(b.deadline) {
			b.mu.Unlock()
			return 0, os.ErrDeadlineExceeded
		}
		ready := b.readyc
		b.mu.Unlock()
		<-ready // bounded by the stream (its end fails the body) and the deadline
	}
}

// setDeadline makes reads that would wait beyond t fail with
// os.ErrDeadlineExceeded, as a net.Conn's; the zero t waits for ever.
func (b *body) setDeadline(t time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.deadline = t
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
	}
	if !t.IsZero() {
		b.timer = time.AfterFunc(time.Until(t), func() {
			b.mu.Lock()
			b.signalLocked()
			b.mu.Unlock()
		})
	}
}

// Close drops what is buffered, giving its window back.
func (b *body) Close() error {
	b.mu.Lock()
	n := len(b.buf)
	b.buf, b.closed = nil, true
	if b.timer != nil {
		b.timer.Stop()
	}
	b.mu.Unlock()
	if n > 0 {
		b.st.c.grant(nil, int64(n))
	}
	return nil
}
