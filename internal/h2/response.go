package h2

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"golang.org/x/net/http/httpguts"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
)

// responseBuffer is how much of a response body a handler's writes
// gather before they are sent; Flush sends it at once.
const responseBuffer = 4 << 10

// responseWriter is a handler's http.ResponseWriter, http.Flusher and
// Detacher.
type responseWriter struct {
	st         *Stream // nil once the handler has returned
	req        *http.Request
	header     http.Header
	sent       http.Header // header as WriteHeader found it
	status     int
	length     int64 // the Content-Length sent, -1 if none
	written    int64 // body bytes written
	headerSent bool
	detached   bool
	buf        []byte // body not yet sent
}

var (
	_ http.Flusher = (*responseWriter)(nil)
	_ Detacher     = (*responseWriter)(nil)
)

func (w *responseWriter) Header() http.Header { return w.header }

// SetReadDeadline bounds the handler's reads of the request body, as
// http.ResponseController's does on HTTP/1.1: a read that would wait
// beyond t fails with os.ErrDeadlineExceeded.
func (w *responseWriter) SetReadDeadline(t time.Time) error {
	w.st.body.setDeadline(t)
	return nil
}

// WriteHeader records the status; the HEADERS frame goes out with the
// first flush or the end. 1xx responses are not sent.
func (w *responseWriter) WriteHeader(code int) {
	if code < 100 || code > 999 {
		panic(fmt.Sprintf("invalid WriteHeader code %v", code))
	}
	if w.status != 0 || code < 200 {
		return
	}
	w.status = code
	w.sent = w.header.Clone()
	w.length = -1
	if v := w.sent.Get("Content-Length"); v != "" {
		n, err := strconv.ParseUint(v, 10, 63)
		if err != nil {
			w.sent.Del("Content-Length") // as net/http does
		} else {
			w.length = int64(n)
		}
	}
}

func (w *responseWriter) bodyAllowed() bool {
	return w.req.Method != http.MethodHead && w.status != http.StatusNoContent && w.status != http.StatusNotModified
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.st == nil || w.detached {
		return 0, ErrStreamClosed
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if w.status == http.StatusNoContent || w.status == http.StatusNotModified {
		return 0, http.ErrBodyNotAllowed
	}
	if w.length >= 0 && w.written+int64(len(p)) > w.length {
		return 0, http.ErrContentLength // none of p is sent, as net/http does
	}
	w.written += int64(len(p))
	if w.req.Method == http.MethodHead {
		return len(p), nil
	}
	if len(w.buf)+len(p) <= responseBuffer {
		w.buf = append(w.buf, p...) // grows to responseBuffer at most
		return len(p), nil
	}
	if err := w.send(p, false); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (w *responseWriter) WriteString(s string) (int, error) { return w.Write([]byte(s)) }

// Flush sends the head and what is buffered.
func (w *responseWriter) Flush() { _ = w.FlushError() }

// FlushError is Flush reporting its error (http.ResponseController).
func (w *responseWriter) FlushError() error {
	if w.st == nil || w.detached {
		return ErrStreamClosed
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return w.send(nil, false)
}

// send writes the head if not yet sent, then the buffer and p, with
// END_STREAM if end.
func (w *responseWriter) send(p []byte, end bool) error {
	st := w.st
	if !w.headerSent {
		w.headerSent = true
		if err := st.writeHeaders(w.status, w.responseHeader(), end && len(w.buf)+len(p) == 0); err != nil {
			return err
		}
		if end && len(w.buf)+len(p) == 0 {
			return nil
		}
	}
	st.pending = st.pending[:0]
	for _, b := range [][]byte{w.buf, p} {
		if len(b) > 0 {
			st.pending = append(st.pending, b)
		}
	}
	err := st.flush(end, false)
	w.buf = nil // a stream that streams (a watch) keeps no buffer between writes
	st.pending = st.pending[:0]
	return err
}

// responseHeader is the header sent: as WriteHeader found it, with a
// Date, a sniffed Content-Type, and the length of a body the handler
// ended without flushing.
func (w *responseWriter) responseHeader() http.Header {
	h := w.sent
	if _, ok := h["Date"]; !ok {
		h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	}
	if _, ok := h["Content-Type"]; !ok && len(w.buf) > 0 {
		h.Set("Content-Type", http.DetectContentType(w.buf))
	}
	return h
}

// finish ends the response after its handler returned: the head, what is
// buffered and END_STREAM; then RST_STREAM(NO_ERROR) if the client has
// not ended its side, so that it stops sending. A body shorter than its
// Content-Length ends so too, as net/http's HTTP/2 server ends it: the
// client finds it short (Go's reads io.ErrUnexpectedEOF).
func (w *responseWriter) finish() {
	st := w.st
	if w.detached {
		return
	}
	if w.status == 0 {
		w.WriteHeader(http.StatusOK)
	}
	if !w.headerSent && w.bodyAllowed() && w.sent.Get("Content-Length") == "" {
		w.sent.Set("Content-Length", strconv.Itoa(len(w.buf)))
	}
	_ = st.endSent(w.send(nil, true))
}

// writeHeaders sends the response head.
func (st *Stream) writeHeaders(status int, h http.Header, end bool) error {
	c := st.c
	c.lockWriter()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return c.werr
	}
	c.mu.Lock()
	if st.ended || st.sentEnd {
		c.mu.Unlock()
		return ErrStreamClosed
	}
	if end {
		st.closeLocked(&st.sentEnd)
	}
	c.mu.Unlock()
	if err := c.writeHeadersLocked(st.id, status, h, end); err != nil {
		return err
	}
	return st.commit(nil, false)
}

// writeHeadersLocked puts a response head in wbuf: HEADERS, and
// CONTINUATIONs if it is longer than a frame. It leaves out the fields
// HTTP/2 does not send (connection-specific ones, RFC 9113 8.2.2, and
// Trailer: trailers are not sent) and, as net/http does, those whose name
// is not a token or whose value has a control character (CR, LF, NUL...),
// which would make the client reject the whole response (RFC 9113 8.2.1).
func (c *conn) writeHeadersLocked(id uint32, status int, h http.Header, end bool) error {
	c.hbuf.Reset()
	enc := func(name, value string) error {
		return c.henc.WriteField(hpackField(name, value))
	}
	err := enc(":status", strconv.Itoa(status))
	for k, vs := range h {
		name := strings.ToLower(k)
		if connectionHeaders[name] || name == "trailer" || !httpguts.ValidHeaderFieldName(k) {
			continue
		}
		for _, v := range vs {
			if httpguts.ValidHeaderFieldValue(v) {
				err = errors.Join(err, enc(name, v))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("h2: encoding a response head: %w", err)
	}
	c.mu.Lock()
	frame := c.peerFrame
	c.mu.Unlock()
	block := c.hbuf.Bytes()
	first := block[:min(len(block), frame)]
	block = block[len(first):]
	err = c.wfr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: first, EndStream: end, EndHeaders: len(block) == 0})
	for err == nil && len(block) > 0 {
		frag := block[:min(len(block), frame)]
		block = block[len(frag):]
		err = c.wfr.WriteContinuation(id, len(block) == 0, frag)
	}
	if err != nil {
		return fmt.Errorf("h2: framing a response head: %w", err)
	}
	return nil
}

func hpackField(name, value string) hpack.HeaderField {
	return hpack.HeaderField{Name: name, Value: value}
}
