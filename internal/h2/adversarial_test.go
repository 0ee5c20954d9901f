package h2_test

// Adversarial tests: a raw client (x/net/http2's Framer and an hpack
// Encoder) that controls every frame, against h2.Server.ServeConn on a
// real socket, checking what RFC 9113 and net/http's HTTP/2 server do:
// floods and the known HTTP/2 denials of service, malformed requests,
// flow control, and the lifecycle of streams and connections.

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/listwatch/listwatch/internal/h2"
	"github.com/listwatch/listwatch/internal/watchstream"
)

// advWait is how long a test waits for a condition before it fails.
const advWait = 10 * time.Second

// advServer serves a handler with an h2.Server on 127.0.0.1, calling
// ServeConn for every accepted connection (cleartext, prior knowledge).
type advServer struct {
	srv  *h2.Server
	ln   net.Listener
	wg   sync.WaitGroup
	idle atomic.Int64 // ConnState idle reports
	mu   sync.Mutex
	ncs  []net.Conn
}

// startAdv starts srv with h; the cleanup closes the listener and every
// connection and waits for ServeConn to return.
func startAdv(t testing.TB, srv *h2.Server, h http.Handler) *advServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &advServer{srv: srv, ln: ln}
	s.wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.ncs = append(s.ncs, nc)
			s.mu.Unlock()
			s.wg.Go(func() {
				srv.ServeConn(nc, h2.ConnOptions{Handler: h, ConnState: func(_ net.Conn, st http.ConnState) {
					if st == http.StateIdle {
						s.idle.Add(1)
					}
				}})
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		s.mu.Lock()
		for _, nc := range s.ncs {
			nc.Close()
		}
		s.mu.Unlock()
		done := make(chan struct{})
		go func() { s.wg.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(advWait):
			t.Error("ServeConn did not return after its connection was closed")
		}
	})
	return s
}

// advClient is a raw HTTP/2 client.
type advClient struct {
	t    testing.TB
	nc   net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
}

// dial connects, sends the preface and SETTINGS with settings.
func (s *advServer) dial(t testing.TB, settings ...http2.Setting) *advClient {
	t.Helper()
	nc, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return newAdvClient(t, nc, settings...)
}

// newAdvClient speaks HTTP/2 on nc (closed by the test's cleanup): the
// preface, then SETTINGS with settings.
func newAdvClient(t testing.TB, nc net.Conn, settings ...http2.Setting) *advClient {
	t.Helper()
	t.Cleanup(func() { nc.Close() })
	c := &advClient{t: t, nc: nc, fr: http2.NewFramer(nc, nc)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.fr.MaxHeaderListSize = 1 << 20
	c.henc = hpack.NewEncoder(&c.hbuf)
	_ = nc.SetWriteDeadline(time.Now().Add(advWait))
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(settings...); err != nil {
		t.Fatal(err)
	}
	return c
}

// block encodes fields (name, value, ...) in the order given.
func (c *advClient) block(fields ...string) []byte {
	c.hbuf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = c.henc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return bytes.Clone(c.hbuf.Bytes())
}

// headers sends a HEADERS frame with END_HEADERS.
func (c *advClient) headers(id uint32, end bool, fields ...string) {
	c.t.Helper()
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: c.block(fields...), EndStream: end, EndHeaders: true}); err != nil {
		c.t.Fatal(err)
	}
}

func advGet(path string) []string {
	return []string{":method", "GET", ":scheme", "http", ":path", path, ":authority", "x"}
}

func advPost(path string, extra ...string) []string {
	return append([]string{":method", "POST", ":scheme", "http", ":path", path, ":authority", "x"}, extra...)
}

// next reads a frame, failing the test after advWait.
func (c *advClient) next() (http2.Frame, error) {
	_ = c.nc.SetReadDeadline(time.Now().Add(advWait))
	return c.fr.ReadFrame()
}

// advResult is how the server ended a stream or the connection.
type advResult struct {
	status  string
	body    []byte
	ended   bool          // END_STREAM
	reset   bool          // RST_STREAM on the stream
	code    http2.ErrCode // the reset's or the GOAWAY's
	goAway  bool
	closed  bool // the connection ended without GOAWAY
	readErr error
}

func (r advResult) String() string {
	switch {
	case r.goAway:
		return fmt.Sprintf("GOAWAY %v", r.code)
	case r.reset:
		return fmt.Sprintf("RST_STREAM %v", r.code)
	case r.closed:
		return fmt.Sprintf("connection closed (%v)", r.readErr)
	}
	return fmt.Sprintf("status %s, %d bytes, end %v", r.status, len(r.body), r.ended)
}

// await reads until stream id ends (END_STREAM or RST_STREAM) or the
// connection does, granting window back for DATA read.
func (c *advClient) await(id uint32) advResult {
	c.t.Helper()
	return c.awaitAll(id)[id]
}

// awaitAll reads until every stream of ids ends or the connection does
// (then the streams not ended have its end).
func (c *advClient) awaitAll(ids ...uint32) map[uint32]advResult {
	c.t.Helper()
	rs := make(map[uint32]*advResult, len(ids))
	for _, id := range ids {
		rs[id] = &advResult{}
	}
	out := func() map[uint32]advResult {
		m := make(map[uint32]advResult, len(rs))
		for id, r := range rs {
			m[id] = *r
		}
		return m
	}
	open := len(ids)
	endAll := func(set func(r *advResult)) map[uint32]advResult {
		for _, r := range rs {
			if !r.ended && !r.reset {
				set(r)
			}
		}
		return out()
	}
	for open > 0 {
		f, err := c.next()
		if err != nil {
			return endAll(func(r *advResult) { r.closed, r.readErr = true, err })
		}
		if g, ok := f.(*http2.GoAwayFrame); ok {
			return endAll(func(r *advResult) { r.goAway, r.code = true, g.ErrCode })
		}
		r := rs[f.Header().StreamID]
		if r == nil || r.ended || r.reset {
			continue
		}
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if s := f.PseudoValue("status"); s != "" {
				r.status = s
			}
			r.ended = f.StreamEnded()
		case *http2.DataFrame:
			r.body = append(r.body, f.Data()...)
			if n := len(f.Data()); n > 0 {
				_ = c.fr.WriteWindowUpdate(0, uint32(n))
				_ = c.fr.WriteWindowUpdate(f.StreamID, uint32(n))
			}
			r.ended = f.StreamEnded()
		case *http2.RSTStreamFrame:
			r.reset, r.code = true, f.ErrCode
		}
		if r.ended || r.reset {
			open--
		}
	}
	return out()
}

// awaitConnEnd reads until GOAWAY or the connection's end.
func (c *advClient) awaitConnEnd() advResult {
	c.t.Helper()
	return c.await(1 << 31) // no such stream
}

// wantOK checks that stream id is served with 200, proving that the
// connection still works.
func (c *advClient) wantOK(id uint32) {
	c.t.Helper()
	c.headers(id, true, advGet("/ok")...)
	if r := c.await(id); r.status != "200" || !r.ended {
		c.t.Fatalf("stream %d after: %v, want status 200", id, r)
	}
}

// wantReset reports an error unless stream id ends with RST_STREAM code.
func (c *advClient) wantReset(id uint32, code http2.ErrCode) {
	c.t.Helper()
	if r := c.await(id); !r.reset || r.code != code {
		c.t.Errorf("stream %d: %v, want RST_STREAM %v", id, r, code)
	}
}

// wantGoAway reports an error unless the connection ends with GOAWAY code.
func (c *advClient) wantGoAway(code http2.ErrCode) {
	c.t.Helper()
	if r := c.awaitConnEnd(); !r.goAway || r.code != code {
		c.t.Errorf("connection: %v, want GOAWAY %v", r, code)
	}
}

// waitFor polls cond until it holds, failing after advWait.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(advWait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// noLeaks fails the test if the goroutine count is not back to what it
// is now by advWait after the test's other cleanups (call it first).
func noLeaks(t testing.TB) {
	t.Helper()
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(advWait)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				t.Errorf("goroutines: %d, %d before the test\n%s", runtime.NumGoroutine(), base, buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// okHandler answers 200 "ok" after reading the body.
var okHandler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	_, _ = io.WriteString(w, "ok")
})

// detacher detaches every stream but /ok's (answered "ok") and hands it
// over on streams; gone is the streams' Detach callback.
func detacher(t testing.TB, streams chan<- *h2.Stream, gone func()) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			_, _ = io.WriteString(w, "ok")
			return
		}
		st, err := w.(h2.Detacher).Detach(gone)
		if err != nil {
			t.Error(err)
			return
		}
		streams <- st
	})
}

// dialOpen dials with the largest windows: only the socket holds data back.
func (s *advServer) dialOpen(t testing.TB) *advClient {
	t.Helper()
	c := s.dial(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	if err := c.fr.WriteWindowUpdate(0, 1<<31-1-65535); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestAdvMalformedRequests: a malformed request (RFC 9113 8.1.1, 8.2,
// 8.3) is a stream error PROTOCOL_ERROR, never handed to the handler, and
// the connection goes on; a well-formed unusual one is served.
func TestAdvMalformedRequests(t *testing.T) {
	noLeaks(t)
	var served atomic.Int64
	var lastMethod atomic.Value
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			served.Add(1)
			lastMethod.Store(r.Method)
		}
		_, _ = io.Copy(io.Discard, r.Body)
	}))
	base := []string{":method", "GET", ":scheme", "http", ":path", "/m", ":authority", "x"}
	with := func(extra ...string) []string { return append(append([]string{}, base...), extra...) }
	malformed := []struct {
		name   string
		fields []string
	}{
		{"connection", with("connection", "keep-alive")},
		{"keep-alive", with("keep-alive", "timeout=5")},
		{"proxy-connection", with("proxy-connection", "keep-alive")},
		{"transfer-encoding", with("transfer-encoding", "chunked")},
		{"upgrade", with("upgrade", "h2c")},
		{"te gzip", with("te", "gzip")},
		{"te trailers, gzip", with("te", "trailers, gzip")},
		{"uppercase name", with("X-Upper", "1")},
		{"space in name", with("x bad", "1")},
		{"newline in value", with("x-v", "a\nb")},
		{"pseudo after regular", []string{":method", "GET", ":scheme", "http", "x-a", "1", ":path", "/m"}},
		{"duplicated :path", with(":path", "/other")},
		{"duplicated :method", []string{":method", "GET", ":method", "POST", ":scheme", "http", ":path", "/m"}},
		{"missing :method", []string{":scheme", "http", ":path", "/m", ":authority", "x"}},
		{"missing :path", []string{":method", "GET", ":scheme", "http", ":authority", "x"}},
		{"missing :scheme", []string{":method", "GET", ":path", "/m", ":authority", "x"}},
		{"empty :path", []string{":method", "GET", ":scheme", "http", ":path", "", ":authority", "x"}},
		{"relative :path", []string{":method", "GET", ":scheme", "http", ":path", "m", ":authority", "x"}},
		{"unknown pseudo", with(":foo", "bar")},
		{"response pseudo", with(":status", "200")},
		{"CONNECT with :path", []string{":method", "CONNECT", ":authority", "x:443", ":path", "/"}},
		{"CONNECT without :authority", []string{":method", "CONNECT"}},
		{"content-length not a number", with("content-length", "x")},
		{"content-length negative", with("content-length", "-1")},
		{"content-lengths differ", with("content-length", "1", "content-length", "2")},
		{"content-length without a body", with("content-length", "5")},
	}
	for _, tc := range malformed {
		t.Run(tc.name, func(t *testing.T) {
			c := s.dial(t)
			before := served.Load()
			c.headers(1, true, tc.fields...)
			r := c.await(1)
			if !(r.reset && r.code == http2.ErrCodeProtocol) && !(r.goAway && r.code == http2.ErrCodeProtocol) {
				t.Fatalf("got %v, want RST_STREAM or GOAWAY PROTOCOL_ERROR", r)
			}
			if r.reset {
				c.wantOK(3)
			}
			if got := served.Load() - before; got != 0 {
				t.Errorf("the handler was called %d times", got)
			}
		})
	}
	wellFormed := []struct {
		name, method string
		fields       []string
	}{
		{"te trailers", "GET", with("te", "trailers")},
		{"OPTIONS *", "OPTIONS", []string{":method", "OPTIONS", ":scheme", "http", ":path", "*", ":authority", "x"}},
		{"CONNECT", "CONNECT", []string{":method", "CONNECT", ":authority", "x:443"}},
		{"two cookies", "GET", with("cookie", "a=1", "cookie", "b=2")},
		{"same content-lengths", "GET", with("content-length", "0", "content-length", "0")},
	}
	for _, tc := range wellFormed {
		t.Run(tc.name, func(t *testing.T) {
			c := s.dial(t)
			before := served.Load()
			c.headers(1, true, tc.fields...)
			if r := c.await(1); r.status != "200" {
				t.Fatalf("got %v, want status 200", r)
			}
			if served.Load()-before != 1 || lastMethod.Load() != tc.method {
				t.Errorf("handler: %d calls, method %v", served.Load()-before, lastMethod.Load())
			}
		})
	}
}

// bodyResult is what a handler read of its request body.
type bodyResult struct {
	body []byte
	err  error
}

// bodyReader reads every request body but /ok's and reports it on results.
func bodyReader(results chan<- bodyResult) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			return
		}
		b, err := io.ReadAll(r.Body)
		results <- bodyResult{b, err}
	})
}

// TestAdvContentLength: a body longer or shorter than its content-length
// is a stream error, and the handler's read fails rather than returning a
// body as if it were whole.
func TestAdvContentLength(t *testing.T) {
	noLeaks(t)
	results := make(chan bodyResult, 1)
	s := startAdv(t, &h2.Server{}, bodyReader(results))
	cases := []struct {
		name   string
		length string
		data   []string // DATA frames; the last ends the stream
		valid  bool
	}{
		{"longer", "3", []string{"abcdef"}, false},
		{"longer in two frames", "4", []string{"abc", "de"}, false},
		{"shorter", "10", []string{"short"}, false},
		{"empty but announced", "3", []string{""}, false},
		{"exact", "6", []string{"abc", "def"}, true},
		{"no length", "", []string{"abc", "def"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := s.dial(t)
			fields := advPost("/cl")
			if tc.length != "" {
				fields = append(fields, "content-length", tc.length)
			}
			c.headers(1, false, fields...)
			for i, d := range tc.data {
				if err := c.fr.WriteData(1, i == len(tc.data)-1, []byte(d)); err != nil {
					t.Fatal(err)
				}
			}
			r := c.await(1)
			var got bodyResult
			select {
			case got = <-results:
			case <-time.After(advWait):
				t.Fatal("the handler's read did not end")
			}
			if tc.valid {
				if r.status != "200" || got.err != nil || string(got.body) != strings.Join(tc.data, "") {
					t.Errorf("stream %v; handler read %q, %v", r, got.body, got.err)
				}
				return
			}
			if !r.reset || r.code != http2.ErrCodeProtocol {
				t.Errorf("stream: %v, want RST_STREAM PROTOCOL_ERROR", r)
			}
			if got.err == nil {
				t.Errorf("the handler read %q as a whole body", got.body)
			}
			c.wantOK(3)
		})
	}
}

// TestAdvStreamIDs: a stream id is never reused, and frames on idle or
// closed streams are errors (RFC 9113 5.1, 5.1.1).
func TestAdvStreamIDs(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, okHandler)
	t.Run("even", func(t *testing.T) {
		c := s.dial(t)
		c.headers(2, true, advGet("/")...)
		c.wantGoAway(http2.ErrCodeProtocol)
	})
	t.Run("reuse of a finished stream", func(t *testing.T) {
		c := s.dial(t)
		c.wantOK(1)
		c.headers(1, true, advGet("/")...)
		r := c.awaitConnEnd()
		if !r.goAway || (r.code != http2.ErrCodeProtocol && r.code != http2.ErrCodeStreamClosed) {
			t.Errorf("got %v, want GOAWAY PROTOCOL_ERROR or STREAM_CLOSED", r)
		}
	})
	t.Run("DATA on an idle stream", func(t *testing.T) {
		c := s.dial(t)
		c.wantOK(1)
		_ = c.fr.WriteData(7, true, []byte("x"))
		c.wantGoAway(http2.ErrCodeProtocol)
	})
	t.Run("DATA on a closed stream", func(t *testing.T) {
		c := s.dial(t)
		c.wantOK(1)
		_ = c.fr.WriteData(1, true, []byte("x"))
		r := c.await(1)
		switch {
		case r.reset && r.code == http2.ErrCodeStreamClosed:
			c.wantOK(3)
		case r.goAway && r.code == http2.ErrCodeStreamClosed:
		default:
			t.Errorf("got %v, want STREAM_CLOSED", r)
		}
	})
	t.Run("WINDOW_UPDATE on an idle stream", func(t *testing.T) {
		c := s.dial(t)
		_ = c.fr.WriteWindowUpdate(9, 100)
		c.wantGoAway(http2.ErrCodeProtocol)
	})
}

// TestAdvStreamReuseAfterMalformed: a stream whose HEADERS the framer
// rejects (uppercase name, duplicated pseudo-header...) is closed by its
// reset: HEADERS reusing its id, or below it, end the connection (RFC 9113
// 5.1.1). Before the fix its id was not marked as seen (the framer returns
// no frame with the error) and such a stream was served.
func TestAdvStreamReuseAfterMalformed(t *testing.T) {
	noLeaks(t)
	var served atomic.Int64
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	c := s.dial(t)
	c.headers(5, true, append(advGet("/"), "X-Upper", "1")...)
	if r := c.await(5); !r.reset || r.code != http2.ErrCodeProtocol {
		t.Fatalf("malformed stream 5: %v", r)
	}
	c.headers(5, true, advGet("/again")...) // the same id
	r := c.await(5)
	if !r.goAway {
		t.Errorf("HEADERS reusing the reset stream 5: %v (handler calls %d), want GOAWAY PROTOCOL_ERROR", r, served.Load())
	}
	c2 := s.dial(t)
	c2.headers(5, true, append(advGet("/"), ":path", "/dup")...)
	if r := c2.await(5); !r.reset {
		t.Fatalf("malformed stream 5: %v", r)
	}
	c2.headers(3, true, advGet("/lower")...) // below it
	if r := c2.await(3); !r.goAway {
		t.Errorf("HEADERS on stream 3 after stream 5: %v, want GOAWAY PROTOCOL_ERROR", r)
	}
}

// TestAdvFlowControl: windows the client overflows, or sends beyond.
func TestAdvFlowControl(t *testing.T) {
	noLeaks(t)
	started := make(chan struct{}, 16)
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			return
		}
		started <- struct{}{}
		<-r.Context().Done() // never reads the body
	}))
	waitStarted := func(t *testing.T) {
		select {
		case <-started:
		case <-time.After(advWait):
			t.Fatal("the handler did not start")
		}
	}
	t.Run("stream window overflow", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, true, advGet("/hold")...)
		waitStarted(t)
		_ = c.fr.WriteWindowUpdate(1, 1<<31-1)
		if r := c.await(1); !r.reset || r.code != http2.ErrCodeFlowControl {
			t.Fatalf("got %v, want RST_STREAM FLOW_CONTROL_ERROR", r)
		}
		c.wantOK(3)
	})
	t.Run("connection window overflow in two", func(t *testing.T) {
		c := s.dial(t)
		_ = c.fr.WriteWindowUpdate(0, 1<<30)
		_ = c.fr.WriteWindowUpdate(0, 1<<30)
		c.wantGoAway(http2.ErrCodeFlowControl)
	})
	t.Run("INITIAL_WINDOW_SIZE overflows an open stream", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, true, advGet("/hold")...)
		waitStarted(t)
		_ = c.fr.WriteWindowUpdate(1, 1<<31-1-65535) // the stream's window at its maximum
		_ = c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 65536})
		c.wantGoAway(http2.ErrCodeFlowControl)
	})
	t.Run("zero increment on a stream", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, true, advGet("/hold")...)
		waitStarted(t)
		_ = c.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 1, []byte{0, 0, 0, 0})
		if r := c.await(1); !r.reset || r.code != http2.ErrCodeProtocol {
			t.Fatalf("got %v, want RST_STREAM PROTOCOL_ERROR", r)
		}
		c.wantOK(3)
	})
	t.Run("DATA beyond the stream window", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, false, advPost("/hold")...)
		waitStarted(t)
		chunk := make([]byte, 16<<10)
		var r advResult
		done := make(chan struct{})
		go func() { defer close(done); r = c.await(1) }()
		for range 17 { // 272 KiB: the server grants 256 KiB per stream
			if err := c.fr.WriteData(1, false, chunk); err != nil {
				t.Fatal(err)
			}
		}
		<-done
		if !r.reset || r.code != http2.ErrCodeFlowControl {
			t.Fatalf("got %v, want RST_STREAM FLOW_CONTROL_ERROR", r)
		}
		c.wantOK(3)
	})
	t.Run("DATA beyond the connection window", func(t *testing.T) {
		c := s.dial(t)
		chunk := make([]byte, 16<<10)
		done := make(chan advResult, 1)
		go func() { done <- c.awaitConnEnd() }()
		for id := uint32(1); id <= 9; id += 2 { // 5 streams x 240 KiB: beyond the 1 MiB granted
			c.headers(id, false, advPost("/hold")...)
			waitStarted(t)
			for range 15 {
				if err := c.fr.WriteData(id, false, chunk); err != nil {
					break // the server has ended the connection
				}
			}
		}
		if r := <-done; !r.goAway || r.code != http2.ErrCodeFlowControl {
			t.Errorf("got %v, want GOAWAY FLOW_CONTROL_ERROR", r)
		}
	})
}

// TestAdvMaxConcurrentStreams: with MaxConcurrentStreams open, the next
// stream is refused; at most as many handlers run: the requests of
// streams opened while the handlers of reset ones still run wait, 4 times
// as many at most (x/net's rule), and one more ends the connection with
// ENHANCE_YOUR_CALM. Before, the reset streams' handlers ran, as many more
// as the limit.
func TestAdvMaxConcurrentStreams(t *testing.T) {
	noLeaks(t)
	const limit = 3
	release := make(chan struct{})
	var started atomic.Int64
	s := startAdv(t, &h2.Server{MaxConcurrentStreams: limit}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		<-release // ignores its context
	}))
	t.Cleanup(func() { close(release) })
	c := s.dial(t)
	id := uint32(1)
	for range limit {
		c.headers(id, true, advGet("/hold")...)
		id += 2
	}
	waitFor(t, "3 handlers", func() bool { return started.Load() == limit })
	c.headers(id, true, advGet("/hold")...)
	if r := c.await(id); !r.reset || r.code != http2.ErrCodeRefusedStream {
		t.Fatalf("stream %d with %d streams open: %v, want REFUSED_STREAM", id, limit, r)
	}
	id += 2
	for rid := uint32(1); rid < 2*limit; rid += 2 {
		_ = c.fr.WriteRSTStream(rid, http2.ErrCodeCancel)
	}
	// No stream open, 3 handlers running: the next 12 requests wait (and
	// their streams are reset, so that none counts as open).
	for range 4 * limit {
		c.headers(id, true, advGet("/hold")...)
		_ = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		id += 2
	}
	if err := c.fr.WritePing(false, [8]byte{'a', 't'}); err != nil {
		t.Fatal(err)
	}
	for {
		f, err := c.next()
		if err != nil {
			t.Fatalf("with %d requests waiting: %v", 4*limit, err)
		}
		if _, ok := f.(*http2.GoAwayFrame); ok {
			t.Fatalf("with %d requests waiting: %v", 4*limit, f)
		}
		if p, ok := f.(*http2.PingFrame); ok && p.IsAck() {
			break
		}
	}
	c.headers(id, true, advGet("/hold")...)
	c.wantGoAway(http2.ErrCodeEnhanceYourCalm)
	if n := started.Load(); n != limit {
		t.Errorf("%d handlers started, MaxConcurrentStreams %d", n, limit)
	}
}

// TestAdvDefaultStreamLimit: the zero Server advertises 100 concurrent
// streams (kube-apiserver's default), serves the 100th and refuses the
// 101st. Before, it allowed 4,096.
func TestAdvDefaultStreamLimit(t *testing.T) {
	noLeaks(t)
	release := make(chan struct{})
	var started atomic.Int64
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started.Add(1)
		<-release
	}))
	t.Cleanup(func() { close(release) })
	c := s.dial(t)
	f, err := c.next()
	if err != nil {
		t.Fatal(err)
	}
	if sf, ok := f.(*http2.SettingsFrame); !ok {
		t.Fatalf("first frame %v, want SETTINGS", f)
	} else if v, _ := sf.Value(http2.SettingMaxConcurrentStreams); v != 100 {
		t.Fatalf("SETTINGS_MAX_CONCURRENT_STREAMS %d, want 100", v)
	}
	id := uint32(1)
	for range 100 {
		c.headers(id, true, advGet("/hold")...)
		id += 2
	}
	waitFor(t, "100 handlers", func() bool { return started.Load() == 100 })
	c.headers(id, true, advGet("/hold")...)
	c.wantReset(id, http2.ErrCodeRefusedStream)
}

// gauge counts the handlers running, and the most at once.
type gauge struct{ running, peak atomic.Int64 }

// enter counts a handler in; the function it returns counts it out.
func (g *gauge) enter() (leave func()) {
	n := g.running.Add(1)
	for p := g.peak.Load(); n > p && !g.peak.CompareAndSwap(p, n); p = g.peak.Load() {
	}
	return func() { g.running.Add(-1) }
}

// TestAdvHandlerWaits: a request that comes while the handler of a reset
// stream still runs (MaxConcurrentStreams 1) is served once it returns.
func TestAdvHandlerWaits(t *testing.T) {
	noLeaks(t)
	release := make(chan struct{})
	var g gauge
	s := startAdv(t, &h2.Server{MaxConcurrentStreams: 1}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer g.enter()()
		if r.URL.Path == "/hold" {
			<-release // ignores its context
		}
	}))
	c := s.dial(t)
	c.headers(1, true, advGet("/hold")...)
	waitFor(t, "the handler", func() bool { return g.running.Load() == 1 })
	_ = c.fr.WriteRSTStream(1, http2.ErrCodeCancel)
	c.headers(3, true, advGet("/ok")...)
	c.headers(5, true, advGet("/ok")...) // refused: stream 3 is open
	if r := c.await(5); !r.reset || r.code != http2.ErrCodeRefusedStream {
		t.Fatalf("stream 5: %v, want REFUSED_STREAM", r)
	}
	close(release)
	if r := c.await(3); r.status != "200" {
		t.Fatalf("stream 3: %v", r)
	}
	if p := g.peak.Load(); p != 1 {
		t.Errorf("%d handlers at once, MaxConcurrentStreams 1", p)
	}
}

// TestAdvManyStreams opens and ends thousands of streams on one
// connection (served, reset by the client mid-handler, malformed,
// refused): none stays in the connection's stream map, as the
// connection's idle report and a limit of 4 concurrent streams show.
func TestAdvManyStreams(t *testing.T) {
	noLeaks(t)
	// Resets are not this test's subject: 2,000 here.
	s := startAdv(t, &h2.Server{MaxConcurrentStreams: 4, MaxResets: 1 << 20}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/hold" {
			<-r.Context().Done()
			return
		}
		_, _ = io.WriteString(w, "ok")
	}))
	c := s.dial(t)
	id := uint32(1)
	for i := range 3000 {
		switch i % 3 {
		case 0:
			c.wantOK(id)
		case 1:
			c.headers(id, true, advGet("/hold")...)
			_ = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		case 2:
			c.headers(id, true, ":method", "GET", ":path", "/") // no :scheme
			if r := c.await(id); !r.reset {
				t.Fatalf("malformed stream %d: %v", id, r)
			}
		}
		id += 2
	}
	// A stream the client saw end may count until its handler's goroutine
	// has returned: try 4 at once until none is refused.
	deadline := time.Now().Add(advWait)
	for {
		var ids []uint32
		for range 4 {
			c.headers(id, true, advGet("/ok")...)
			ids = append(ids, id)
			id += 2
		}
		refused := 0
		for i, r := range c.awaitAll(ids...) {
			switch {
			case r.reset && r.code == http2.ErrCodeRefusedStream:
				refused++
			case r.status != "200":
				t.Fatalf("stream %d: %v", i, r)
			}
		}
		if refused == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of 4 concurrent streams still refused after 3000 (streams left in the map)", refused)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAdvRapidReset (CVE-2023-44487): HEADERS then RST_STREAM, over and
// over, with a handler that ignores its context: the connection ends
// with ENHANCE_YOUR_CALM and no more handlers run at once than
// MaxConcurrentStreams (before: twice as many).
func TestAdvRapidReset(t *testing.T) {
	noLeaks(t)
	release := make(chan struct{})
	var g gauge
	s := startAdv(t, &h2.Server{MaxConcurrentStreams: 50}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer g.enter()()
		<-release
	}))
	defer close(release)
	c := s.dial(t)
	block := c.block(advGet("/")...)
	go func() {
		for id := uint32(1); id < 2*100000; id += 2 {
			err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
			if errors.Join(err, c.fr.WriteRSTStream(id, http2.ErrCodeCancel)) != nil {
				return
			}
		}
	}()
	c.wantGoAway(http2.ErrCodeEnhanceYourCalm)
	if p := g.peak.Load(); p > 50 {
		t.Errorf("%d handlers at once, MaxConcurrentStreams 50", p)
	}
}

// madeYouReset are the frames that make the server reset a stream it has
// started a handler for (or would have), each a stream error the client
// provokes (MadeYouReset, CVE-2025-8671), and, counted alike, the
// client's own reset.
var madeYouReset = []struct {
	name    string
	handler bool // the stream's handler is started before the reset
	provoke func(c *advClient, id uint32)
}{
	{"WINDOW_UPDATE overflows the stream window", true, func(c *advClient, id uint32) {
		c.headers(id, true, advGet("/hold")...)
		_ = c.fr.WriteWindowUpdate(id, 1<<31-1)
	}},
	{"WINDOW_UPDATE of zero on the stream", true, func(c *advClient, id uint32) {
		c.headers(id, true, advGet("/hold")...)
		_ = c.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, id, []byte{0, 0, 0, 0})
	}},
	{"DATA on a half-closed stream", true, func(c *advClient, id uint32) {
		c.headers(id, true, advGet("/hold")...)
		_ = c.fr.WriteData(id, false, []byte("x"))
	}},
	{"DATA beyond the content-length", true, func(c *advClient, id uint32) {
		c.headers(id, false, advPost("/hold", "content-length", "1")...)
		_ = c.fr.WriteData(id, false, []byte("xx"))
	}},
	{"PRIORITY on the stream itself", true, func(c *advClient, id uint32) {
		c.headers(id, false, advGet("/hold")...)
		_ = c.fr.WritePriority(id, http2.PriorityParam{StreamDep: id})
	}},
	{"trailers with a pseudo-header", true, func(c *advClient, id uint32) {
		c.headers(id, false, advPost("/hold")...)
		c.headers(id, true, ":method", "GET")
	}},
	{"malformed HEADERS", false, func(c *advClient, id uint32) {
		c.headers(id, true, ":method", "GET", ":path", "/hold") // no :scheme
	}},
	{"the client's own RST_STREAM (rapid reset)", true, func(c *advClient, id uint32) {
		c.headers(id, true, advGet("/hold")...)
		_ = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
	}},
}

// TestAdvMadeYouReset (CVE-2025-8671): streams the server resets because
// of the client's frames count against MaxResets as the client's own
// resets do: MaxResets of them and the connection still serves, one more
// ends it with ENHANCE_YOUR_CALM, and a handler ran for no more streams
// than were reset. Before, they were not counted and the client could
// start handlers without end.
func TestAdvMadeYouReset(t *testing.T) {
	noLeaks(t)
	const budget = 50
	var mu sync.Mutex
	started := map[string]int{} // by the client's address
	s := startAdv(t, &h2.Server{MaxResets: budget}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/ok" {
			return
		}
		mu.Lock()
		started[r.RemoteAddr]++
		mu.Unlock()
		<-r.Context().Done() // works until the stream's reset
	}))
	for _, tc := range madeYouReset {
		t.Run(tc.name, func(t *testing.T) {
			c := s.dial(t)
			id := uint32(1)
			for range budget {
				tc.provoke(c, id)
				id += 2
			}
			c.wantOK(id) // at the budget
			tc.provoke(c, id+2)
			c.wantGoAway(http2.ErrCodeEnhanceYourCalm)
			want := 0
			if tc.handler {
				want = budget + 1
			}
			mu.Lock()
			n := started[c.nc.LocalAddr().String()]
			mu.Unlock()
			if n > want {
				t.Errorf("%d handlers started for %d streams reset", n, budget+1)
			}
		})
	}
}

// TestAdvDataAfterOurReset: DATA the client sent before it saw our
// RST_STREAM, on a stream whose handler still runs, is ignored (RFC 9113
// 5.1), not counted as another reset it provoked: MaxResets streams reset
// and DATA on each after the reset, and the connection still serves.
func TestAdvDataAfterOurReset(t *testing.T) {
	noLeaks(t)
	const budget = 5
	release := make(chan struct{})
	s := startAdv(t, &h2.Server{MaxResets: budget}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ok" {
			<-release // ignores its context: its stream stays known
		}
	}))
	t.Cleanup(func() { close(release) })
	c := s.dial(t)
	id := uint32(1)
	for range budget {
		c.headers(id, false, advPost("/upload")...)
		_ = c.fr.WritePriority(id, http2.PriorityParam{StreamDep: id})
		for range 3 {
			if err := c.fr.WriteData(id, false, []byte("x")); err != nil {
				t.Fatal(err)
			}
		}
		id += 2
	}
	c.wantOK(id)
}

// floodWrites writes frames with write until the server stops reading
// (a write waits longer than stall) or limit bytes are written; it
// returns the bytes written.
func floodWrites(c *advClient, limit int64, stall time.Duration, write func() error, size int64) int64 {
	var n int64
	for n < limit {
		_ = c.nc.SetWriteDeadline(time.Now().Add(stall))
		if write() != nil {
			break
		}
		n += size
	}
	_ = c.nc.SetWriteDeadline(time.Now().Add(advWait))
	return n
}

// TestAdvControlFlood (CVE-2019-9512, 9515): PING or SETTINGS frames from
// a client that never reads, in cleartext and over TLS: the server does
// not queue its answers without bound (it stops reading, or ends the
// connection) and its heap stays flat.
func TestAdvControlFlood(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, okHandler)
	dialTLS := startAdvTLS(t, &h2.Server{}, okHandler)
	// Over TLS the answers go to the connection's write queue (queue.go),
	// written by a flusher: the reader stops when it is full.
	dials := map[string]func(t *testing.T) *advClient{
		"cleartext": func(t *testing.T) *advClient { return s.dial(t) },
		"TLS":       func(*testing.T) *advClient { return dialTLS() },
	}
	floods := []struct {
		name    string
		size    int64
		write   func(c *advClient) error
		overTLS bool // the CVEs' floods; the others' answers take the same path
	}{
		{"PING", 17, func(c *advClient) error { return c.fr.WritePing(false, [8]byte{1}) }, true},
		{"SETTINGS", 15, func(c *advClient) error {
			return c.fr.WriteSettings(http2.Setting{ID: http2.SettingEnablePush, Val: 0})
		}, true},
		{"RST_STREAM on a closed stream", 13, func(c *advClient) error { return c.fr.WriteRSTStream(1, http2.ErrCodeCancel) }, false},
		{"DATA on a closed stream", 9, func(c *advClient) error { return c.fr.WriteData(1, false, nil) }, false},
	}
	for transport, dial := range dials {
		for _, fl := range floods {
			if transport == "TLS" && !fl.overTLS {
				continue
			}
			t.Run(transport+" "+fl.name, func(t *testing.T) {
				c := dial(t)
				c.wantOK(1)
				before := heapInUse()
				const limit = 256 << 20
				n := floodWrites(c, limit, 2*time.Second, func() error { return fl.write(c) }, fl.size)
				grew := heapInUse() - before
				t.Logf("%s: the server took %d KiB of frames; heap %+d KiB", fl.name, n>>10, grew>>10)
				if n >= limit {
					t.Errorf("the server read %d MiB of %s without its answers being read", n>>20, fl.name)
				}
				if grew > 8<<20 {
					t.Errorf("heap grew by %d KiB", grew>>10)
				}
			})
		}
	}
}

// TestAdvSettingsFrame: a SETTINGS frame of 100 settings is applied; of
// 101 it ends the connection with PROTOCOL_ERROR, as x/net's server does
// (each INITIAL_WINDOW_SIZE walks the streams).
func TestAdvSettingsFrame(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, okHandler)
	unknown := func(n int) []http2.Setting { // ids RFC 9113 does not define: ignored
		out := make([]http2.Setting, n)
		for i := range out {
			out[i] = http2.Setting{ID: http2.SettingID(0x100 + i), Val: 1}
		}
		return out
	}
	t.Run("100", func(t *testing.T) {
		c := s.dial(t)
		_ = c.fr.WriteSettings(unknown(100)...)
		c.wantOK(1)
	})
	t.Run("101", func(t *testing.T) {
		c := s.dial(t)
		_ = c.fr.WriteSettings(unknown(101)...)
		c.wantGoAway(http2.ErrCodeProtocol)
	})
}

// TestAdvFrameSize: a frame of the 16 KiB we advertise (the default
// SETTINGS_MAX_FRAME_SIZE; x/net's server reads 1 MiB, kube's 256 KiB)
// is read; one byte more ends the connection with FRAME_SIZE_ERROR.
func TestAdvFrameSize(t *testing.T) {
	noLeaks(t)
	got := make(chan bodyResult, 1)
	s := startAdv(t, &h2.Server{}, bodyReader(got))
	t.Run("16384", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, false, advPost("/body")...)
		_ = c.fr.WriteData(1, true, make([]byte, 16384))
		if r := c.await(1); r.status != "200" {
			t.Fatalf("got %v", r)
		}
		if b := <-got; b.err != nil || len(b.body) != 16384 {
			t.Errorf("body of %d bytes, %v", len(b.body), b.err)
		}
	})
	t.Run("16385", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, false, advPost("/body")...)
		_ = c.fr.WriteData(1, true, make([]byte, 16385))
		c.wantGoAway(http2.ErrCodeFrameSize)
	})
}

// TestAdvSilentFloods: PRIORITY and WINDOW_UPDATE frames, which the
// server reads without answering (as x/net's does, which bounds neither):
// 8 MiB of them leave the heap flat and the connection serving.
func TestAdvSilentFloods(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, okHandler)
	for _, fl := range []struct {
		name  string
		size  int
		write func(c *advClient) error
	}{
		{"PRIORITY", 14, func(c *advClient) error { return c.fr.WritePriority(1, http2.PriorityParam{StreamDep: 3, Weight: 7}) }},
		{"WINDOW_UPDATE", 13, func(c *advClient) error { return c.fr.WriteWindowUpdate(0, 1) }},
	} {
		t.Run(fl.name, func(t *testing.T) {
			c := s.dial(t)
			c.wantOK(1)
			before := heapInUse()
			for n := 0; n < 8<<20; n += fl.size {
				if n%(1<<20) < fl.size {
					_ = c.nc.SetWriteDeadline(time.Now().Add(advWait))
				}
				if err := fl.write(c); err != nil {
					t.Fatal(err)
				}
			}
			c.wantOK(3)
			if grew := heapInUse() - before; grew > 8<<20 {
				t.Errorf("heap grew by %d KiB", grew>>10)
			}
		})
	}
}

// TestAdvEmptyFrames (CVE-2019-9518): empty DATA frames on an open stream
// (the heap stays flat and the connection still serves), and empty
// HEADERS on new streams (malformed: the connection ends after
// MaxResets of them).
func TestAdvEmptyFrames(t *testing.T) {
	noLeaks(t)
	got := make(chan bodyResult, 1)
	s := startAdv(t, &h2.Server{}, bodyReader(got))
	t.Run("DATA", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, false, advPost("/body")...)
		before := heapInUse()
		for range 200000 {
			if err := c.fr.WriteData(1, false, nil); err != nil {
				t.Fatal(err)
			}
		}
		_ = c.fr.WriteData(1, true, []byte("end"))
		if r := c.await(1); r.status != "200" {
			t.Fatalf("got %v", r)
		}
		if grew := heapInUse() - before; grew > 8<<20 {
			t.Errorf("heap grew by %d KiB", grew>>10)
		}
		if b := <-got; b.err != nil || string(b.body) != "end" {
			t.Errorf("body %q, %v", b.body, b.err)
		}
		c.wantOK(3)
	})
	t.Run("HEADERS", func(t *testing.T) {
		c := s.dial(t)
		before := heapInUse()
		done := make(chan int, 1)
		go func() {
			resets := 0
			for {
				f, err := c.next()
				if err != nil {
					t.Error(err)
					break
				}
				if _, ok := f.(*http2.RSTStreamFrame); ok {
					resets++
				}
				if g, ok := f.(*http2.GoAwayFrame); ok {
					if g.ErrCode != http2.ErrCodeEnhanceYourCalm {
						t.Errorf("GOAWAY %v, want ENHANCE_YOUR_CALM", g.ErrCode)
					}
					break
				}
			}
			done <- resets
		}()
		id := uint32(1)
		for range 20000 {
			if c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, EndStream: true, EndHeaders: true}) != nil {
				break // the server has ended the connection
			}
			id += 2
		}
		// Each is a malformed request the server resets: a reset the
		// client provoked.
		if n := <-done; n != h2.DefaultMaxResets {
			t.Errorf("%d resets for empty HEADERS before GOAWAY, want %d", n, h2.DefaultMaxResets)
		}
		if grew := heapInUse() - before; grew > 8<<20 {
			t.Errorf("heap grew by %d KiB", grew>>10)
		}
	})
}

// TestAdvContinuationBytes (CVE-2023-45288): a header block of real
// fields that goes on in CONTINUATION frames past MaxHeaderBytes ends
// the connection long before the client stops sending.
func TestAdvContinuationBytes(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{MaxHeaderBytes: 16 << 10}, okHandler)
	c := s.dial(t)
	done := make(chan advResult, 1)
	go func() { done <- c.awaitConnEnd() }()
	_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.block(advGet("/")...)})
	var sent int64
	for sent < 64<<20 {
		frag := c.block("x-filler", strings.Repeat("a", 8000), "x-filler2", strings.Repeat("b", 8000))
		_ = c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if c.fr.WriteContinuation(1, false, frag) != nil {
			break
		}
		sent += int64(len(frag))
	}
	r := <-done
	if !r.goAway && !r.closed {
		t.Fatalf("got %v, want the connection's end", r)
	}
	if sent >= 64<<20 {
		t.Errorf("the server read %d MiB of one header block", sent>>20)
	}
}

// TestAdvContinuationFrames (CVE-2023-45288, CVE-2024-27983): a header
// block may take a HEADERS and 8 CONTINUATIONs (nghttp2's bound), or as
// many as its byte bound needs in 16 KiB frames (65 for the default
// MaxHeaderBytes); one frame more, here an empty CONTINUATION, ends the
// connection with ENHANCE_YOUR_CALM. Before, 64 to 1,040 were allowed.
func TestAdvContinuationFrames(t *testing.T) {
	noLeaks(t)
	for _, tc := range []struct {
		srv    *h2.Server
		frames int
	}{
		{&h2.Server{MaxHeaderBytes: 16 << 10}, 9},
		{&h2.Server{}, 65}, // (1 MiB + 16 KiB) / 16 KiB
	} {
		s := startAdv(t, tc.srv, okHandler)
		send := func(c *advClient, frames int) {
			_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.block(advGet("/")...), EndStream: true})
			for i := 2; i <= frames; i++ {
				if c.fr.WriteContinuation(1, i == frames, nil) != nil {
					return // the server has ended the connection
				}
			}
		}
		t.Run(fmt.Sprintf("%d frames", tc.frames), func(t *testing.T) {
			c := s.dial(t)
			send(c, tc.frames)
			if r := c.await(1); r.status != "200" {
				t.Fatalf("a header block of %d frames: %v", tc.frames, r)
			}
		})
		t.Run(fmt.Sprintf("%d frames", tc.frames+1), func(t *testing.T) {
			c := s.dial(t)
			send(c, tc.frames+1)
			c.wantGoAway(http2.ErrCodeEnhanceYourCalm)
		})
		t.Run(fmt.Sprintf("a list just under MaxHeaderBytes in full frames, %d at most", tc.frames), func(t *testing.T) {
			c := s.dial(t)
			// "~" has no shorter Huffman code: the block is as long as the list.
			limit := int(tc.srv.MaxHeaderBytes)
			if limit == 0 {
				limit = h2.DefaultMaxHeaderBytes
			}
			block := c.block(append(advGet("/"), "x-big", strings.Repeat("~", limit-256))...)
			for i := 0; len(block) > 0; i++ {
				n := min(len(block), 16<<10)
				if i == 0 {
					_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:n], EndStream: true, EndHeaders: n == len(block)})
				} else {
					_ = c.fr.WriteContinuation(1, n == len(block), block[:n])
				}
				block = block[n:]
			}
			if r := c.await(1); r.status != "200" {
				t.Fatalf("got %v", r)
			}
		})
	}
}

// TestAdvHeaderListJustOver: a header list just over MaxHeaderBytes gets
// 431 or a connection error; one far over ends the connection without the
// server decoding it all.
func TestAdvHeaderListJustOver(t *testing.T) {
	noLeaks(t)
	var served atomic.Int64
	s := startAdv(t, &h2.Server{MaxHeaderBytes: 8 << 10}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	t.Run("just over", func(t *testing.T) {
		c := s.dial(t)
		// hpack size: name + value + 32 per field; the pseudo-headers add ~150.
		c.headers(1, true, append(advGet("/"), "x-big", strings.Repeat("v", 8<<10-32-5))...)
		r := c.await(1)
		if r.status != "431" && !r.goAway {
			t.Fatalf("got %v, want 431 or GOAWAY", r)
		}
		if r.status == "431" {
			c.wantOK(3)
		}
	})
	t.Run("just under", func(t *testing.T) {
		c := s.dial(t)
		c.headers(1, true, append(advGet("/"), "x-big", strings.Repeat("v", 7<<10))...)
		if r := c.await(1); r.status != "200" {
			t.Fatalf("got %v", r)
		}
	})
	t.Run("far over", func(t *testing.T) {
		c := s.dial(t)
		before := served.Load()
		frags := c.block(append(advGet("/"), "x-big", strings.Repeat("v", 1<<20))...)
		done := make(chan advResult, 1)
		go func() { done <- c.awaitConnEnd() }()
		_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: frags[:16<<10]})
		for rest := frags[16<<10:]; len(rest) > 0; {
			n := min(len(rest), 16<<10)
			if c.fr.WriteContinuation(1, n == len(rest), rest[:n]) != nil {
				break
			}
			rest = rest[n:]
		}
		if r := <-done; !r.goAway && !r.closed {
			t.Fatalf("got %v, want the connection's end", r)
		}
		if served.Load() != before {
			t.Error("the handler was called")
		}
	})
}

// TestAdvHPACKTable: the client's dynamic table sizes, too large for us
// or shrunk to nothing.
func TestAdvHPACKTable(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		for i := range 20 {
			w.Header().Set(fmt.Sprintf("x-h%d", i), strings.Repeat("h", 200))
		}
	}))
	t.Run("table size update beyond ours", func(t *testing.T) {
		c := s.dial(t)
		c.hbuf.Reset()
		c.henc.SetMaxDynamicTableSizeLimit(1 << 20)
		c.henc.SetMaxDynamicTableSize(1 << 20) // the encoder announces it in the next block
		c.headers(1, true, advGet("/")...)
		c.wantGoAway(http2.ErrCodeCompression)
	})
	for _, size := range []uint32{0, 1<<32 - 1} {
		t.Run(fmt.Sprintf("client table %d", size), func(t *testing.T) {
			c := s.dial(t, http2.Setting{ID: http2.SettingHeaderTableSize, Val: size})
			c.fr.ReadMetaHeaders = hpack.NewDecoder(min(size, 4096), nil)
			for id := uint32(1); id < 40; id += 2 {
				c.headers(id, true, advGet("/")...)
				if r := c.await(id); r.status != "200" {
					t.Fatalf("stream %d: %v", id, r)
				}
			}
		})
	}
}

// TestAdvZeroWindowMemory (CVE-2019-9517): a client that opens many
// streams with zero windows and never reads, each with a large response:
// the server's heap stays bounded (no copy of the responses), and the
// handlers end when the client goes.
func TestAdvZeroWindowMemory(t *testing.T) {
	noLeaks(t)
	big := bytes.Repeat([]byte("z"), 1<<20) // shared: the handlers allocate nothing
	var blocked atomic.Int64
	s := startAdv(t, &h2.Server{MaxConcurrentStreams: 1000}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		blocked.Add(1)
		defer blocked.Add(-1)
		_, _ = w.Write(big)
	}))
	c := s.dial(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	before := heapInUse()
	const streams = 1000
	for id := uint32(1); id < 2*streams; id += 2 {
		c.headers(id, true, advGet("/")...)
	}
	waitFor(t, "every handler writing", func() bool { return blocked.Load() == streams })
	grew := heapInUse() - before
	t.Logf("%d streams blocked on a zero window: heap %+d KiB, %d B per stream", streams, grew>>10, grew/streams)
	if grew > streams*16<<10 {
		t.Errorf("heap grew by %d KiB for %d streams", grew>>10, streams)
	}
	c.nc.Close()
	waitFor(t, "the handlers' end", func() bool { return blocked.Load() == 0 })
}

// TestAdvClientVanishes: the client's connection ends while handlers
// read a body, wait on their context, or wait for a window: every
// handler's context ends and its goroutine returns.
func TestAdvClientVanishes(t *testing.T) {
	noLeaks(t)
	var running atomic.Int64
	ctxDone := make(chan string, 3)
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		switch r.URL.Path {
		case "/read":
			_, _ = io.ReadAll(r.Body)
		case "/ctx":
			<-r.Context().Done()
		case "/write":
			_, _ = w.Write(make([]byte, 1<<20))
		}
		<-r.Context().Done()
		ctxDone <- r.URL.Path
	}))
	c := s.dial(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	c.headers(1, false, advPost("/read")...)
	c.headers(3, true, advGet("/ctx")...)
	c.headers(5, true, advGet("/write")...)
	waitFor(t, "3 handlers", func() bool { return running.Load() == 3 })
	c.nc.Close()
	for range 3 {
		select {
		case <-ctxDone:
		case <-time.After(advWait):
			t.Fatal("a handler's context did not end")
		}
	}
	waitFor(t, "the handlers' end", func() bool { return running.Load() == 0 })
}

// startWriting serves handlers that write size bytes, counting those
// running.
func startWriting(t *testing.T, srv *h2.Server, size int) (*advServer, *atomic.Int64) {
	t.Helper()
	running := new(atomic.Int64)
	s := startAdv(t, srv, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		running.Add(1)
		defer running.Add(-1)
		_, _ = w.Write(make([]byte, size))
	}))
	return s, running
}

// TestAdvShutdownZeroWindow: Shutdown with a handler blocked on a zero
// window: GOAWAY at once, and the connection ends after ShutdownGrace.
func TestAdvShutdownZeroWindow(t *testing.T) {
	noLeaks(t)
	srv := &h2.Server{ShutdownGrace: 500 * time.Millisecond}
	s, running := startWriting(t, srv, 1<<20)
	c := s.dial(t, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0})
	c.headers(1, true, advGet("/")...)
	waitFor(t, "the handler", func() bool { return running.Load() == 1 })
	start := time.Now()
	srv.Shutdown()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown took %v", d)
	}
	if r := c.awaitConnEnd(); !r.goAway || r.code != http2.ErrCodeNo {
		t.Fatalf("got %v, want GOAWAY NO_ERROR", r)
	}
	for {
		if _, err := c.next(); err != nil {
			break
		}
	}
	if d := time.Since(start); d > srv.ShutdownGrace+2*time.Second {
		t.Errorf("the connection ended %v after Shutdown, grace %v", d, srv.ShutdownGrace)
	}
	waitFor(t, "the handler's end", func() bool { return running.Load() == 0 })
}

// TestAdvDetachedShutdown: Shutdown with a detached stream its owner
// never ends, to a client that reads: GOAWAY, then the connection ends
// after ShutdownGrace and the owner is told.
func TestAdvDetachedShutdown(t *testing.T) {
	noLeaks(t)
	gone := make(chan struct{})
	streams := make(chan *h2.Stream, 1)
	srv := &h2.Server{ShutdownGrace: 500 * time.Millisecond}
	s := startAdv(t, srv, detacher(t, streams, func() { close(gone) }))
	c := s.dial(t)
	c.headers(1, true, advGet("/")...)
	st := <-streams
	if err := st.Send([][]byte{[]byte("event")}, true); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	srv.Shutdown()
	if r := c.awaitConnEnd(); !r.goAway || r.code != http2.ErrCodeNo {
		t.Fatalf("got %v, want GOAWAY NO_ERROR", r)
	}
	select {
	case <-gone:
	case <-time.After(advWait):
		t.Fatal("gone not called")
	}
	if d := time.Since(start); d > srv.ShutdownGrace+2*time.Second {
		t.Errorf("the stream ended %v after Shutdown, grace %v", d, srv.ShutdownGrace)
	}
	if err := st.Send([][]byte{[]byte("late")}, false); err == nil {
		t.Error("Send after the connection's end succeeded")
	}
}

// TestAdvDetachedResetWhileStalled: a detached stream's non-blocking Send
// stalls on the socket (the client does not read yet); the client resets
// the stream: the owner is told, its Flush ends at once with an error, and
// the connection's other streams still get whole frames.
func TestAdvDetachedResetWhileStalled(t *testing.T) {
	noLeaks(t)
	gone := make(chan struct{})
	streams := make(chan *h2.Stream, 1)
	s := startAdv(t, &h2.Server{}, detacher(t, streams, func() { close(gone) }))
	c := s.dialOpen(t)
	c.headers(1, true, advGet("/detach")...)
	st := <-streams
	payload := make([]byte, 32<<20) // beyond loopback's socket buffers
	if err := st.Send([][]byte{payload}, true); err != nil {
		t.Fatal(err)
	}
	if !st.Stalled() {
		t.Fatal("32 MiB went to the socket at once")
	}
	_ = c.fr.WriteRSTStream(1, http2.ErrCodeCancel)
	c.headers(3, true, advGet("/ok")...)
	// Read everything: the reset reaches the reader once the socket
	// drains, whatever the timing.
	result := make(chan advResult, 1)
	go func() { result <- c.await(3) }()
	select {
	case <-gone:
	case <-time.After(advWait):
		t.Fatal("gone not called after the client's reset")
	}
	flushed := make(chan error, 1)
	go func() { flushed <- st.Flush(false) }()
	select {
	case err := <-flushed:
		if err == nil {
			t.Error("Flush of a reset stream succeeded")
		}
	case <-time.After(advWait):
		t.Fatal("Flush of a reset stream did not return")
	}
	if r := <-result; r.status != "200" || string(r.body) != "ok" {
		t.Errorf("stream 3 after the reset: %v", r)
	}
}

// TestAdvDetachedSlowReader: a detached stream's blocking Send to a
// client that stopped reading ends with the stream's Bound.
func TestAdvDetachedSlowReader(t *testing.T) {
	noLeaks(t)
	streams := make(chan *h2.Stream, 1)
	s := startAdv(t, &h2.Server{}, detacher(t, streams, func() {}))
	c := s.dialOpen(t)
	c.headers(1, true, advGet("/")...)
	st := <-streams
	st.Bound(500 * time.Millisecond)
	start := time.Now()
	err := st.Send([][]byte{make([]byte, 64<<20)}, false)
	if err == nil || !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Send to a client that does not read: %v, want a deadline error", err)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("Send returned after %v, bound 500ms", d)
	}
	st.Reset()
}

// FuzzAdvRequestHeaders sends one request whose header list (names and
// values, pseudo-headers included, in any order) is the fuzzer's, well
// encoded in HEADERS, so that the fuzzer works on the server's request
// validation rather than on framing (FuzzServeConn's): whatever the server
// hands a handler is a well-formed HTTP/2 request (RFC 9113 8.2, 8.3).
// The input is "name\x01value" fields separated by "\x00".
func FuzzAdvRequestHeaders(f *testing.F) {
	for _, seed := range []string{
		":method\x01GET\x00:scheme\x01http\x00:path\x01/x?y=1\x00:authority\x01h",
		":method\x01POST\x00:scheme\x01https\x00:path\x01/\x00content-length\x010\x00te\x01trailers",
		":method\x01CONNECT\x00:authority\x01h:443",
		":method\x01OPTIONS\x00:scheme\x01http\x00:path\x01*\x00cookie\x01a=1\x00cookie\x01b=2",
		":method\x01GET\x00:scheme\x01http\x00:path\x01/\x00connection\x01close",
		":method\x01GET\x00x-a\x01b\x00:scheme\x01http\x00:path\x01/",
	} {
		f.Add(seed)
	}
	srv := &h2.Server{}
	f.Fuzz(func(t *testing.T, in string) {
		var buf, hb bytes.Buffer
		enc := hpack.NewEncoder(&hb)
		for field := range strings.SplitSeq(in, "\x00") {
			name, value, _ := strings.Cut(field, "\x01")
			_ = enc.WriteField(hpack.HeaderField{Name: name, Value: value})
		}
		fr := http2.NewFramer(&buf, nil)
		_ = fr.WriteSettings()
		block := hb.Bytes()
		first := block[:min(len(block), 16<<10)]
		_ = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: first, EndStream: true, EndHeaders: len(first) == len(block)})
		for rest := block[len(first):]; len(rest) > 0; {
			n := min(len(rest), 16<<10)
			_ = fr.WriteContinuation(1, n == len(rest), rest[:n])
			rest = rest[n:]
		}
		handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if err := wellFormed(r); err != nil {
				t.Errorf("the handler got a malformed request (%v): %q %q %v", err, r.Method, r.RequestURI, r.Header)
			}
		})
		client, server := net.Pipe()
		var wg sync.WaitGroup
		wg.Go(func() { srv.ServeConn(server, h2.ConnOptions{Handler: handler}) })
		wg.Go(func() { _, _ = io.Copy(io.Discard, client) })
		_, _ = client.Write(append([]byte(http2.ClientPreface), buf.Bytes()...))
		client.Close()
		wg.Wait()
	})
}

// wellFormed checks what RFC 9113 8.2 and 8.3 ask of a request.
func wellFormed(r *http.Request) error {
	if r.Method == "" || strings.ContainsAny(r.Method, " \t\r\n:") {
		return fmt.Errorf("method %q", r.Method)
	}
	for name, vs := range r.Header {
		switch strings.ToLower(name) {
		case "connection", "proxy-connection", "keep-alive", "transfer-encoding", "upgrade":
			return fmt.Errorf("connection-specific %s", name)
		case "te":
			if len(vs) != 1 || vs[0] != "trailers" {
				return fmt.Errorf("te %q", vs)
			}
		}
		if name == "" || strings.HasPrefix(name, ":") || strings.ContainsAny(name, " \t\r\n\x00") {
			return fmt.Errorf("header name %q", name)
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				return fmt.Errorf("header value %q", v)
			}
		}
	}
	switch {
	case r.Method == http.MethodConnect:
		if r.Host == "" || r.RequestURI != "" {
			return fmt.Errorf("CONNECT to %q, %q", r.Host, r.RequestURI)
		}
	case r.RequestURI == "*":
		if r.Method != http.MethodOptions {
			return fmt.Errorf("%s *", r.Method)
		}
	case !strings.HasPrefix(r.RequestURI, "/") || r.URL == nil:
		return fmt.Errorf("path %q", r.RequestURI)
	}
	if r.ContentLength < -1 {
		return fmt.Errorf("content-length %d", r.ContentLength)
	}
	return nil
}

// startAdvTLS serves h with srv over TLS (startTLSListener) and returns a
// dial function for a raw client.
func startAdvTLS(t *testing.T, srv *h2.Server, h http.Handler) func(settings ...http2.Setting) *advClient {
	addr := startTLSListener(t, srv, h)
	return func(settings ...http2.Setting) *advClient {
		tc, err := tls.Dial("tcp", addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
		if err != nil {
			t.Fatal(err)
		}
		return newAdvClient(t, tc, settings...)
	}
}

// startTLSListener serves h with srv over TLS (ALPN h2) on 127.0.0.1, on
// watchstream.Listener's connections (socketConns) as listwatch serve does, and
// returns the address; the cleanup closes the listener and every
// connection and waits for ServeConn to return.
func startTLSListener(t *testing.T, srv *h2.Server, h http.Handler) string {
	ts := httptest.NewUnstartedServer(nil)
	ts.StartTLS()
	cfg := ts.TLS.Clone()
	ts.Close()
	cfg.NextProtos = []string{"h2"}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := watchstream.Listener(tcp)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Go(func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, nc)
			mu.Unlock()
			wg.Go(func() {
				tc := tls.Server(nc, cfg)
				if tc.Handshake() != nil {
					nc.Close()
					return
				}
				st := tc.ConnectionState()
				srv.ServeConn(tc, h2.ConnOptions{Handler: h, TLS: &st})
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, nc := range conns {
			nc.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return tcp.Addr().String()
}

// TestAdvTLSSendBesideStalledStream: over TLS, while a stream's large send
// stalls (the connection's write queue is full: queue.go), a non-blocking
// Send on another stream is not lost: whether it stalls too depends on
// what the socket took, and either way its owner's Flush and Close
// deliver it whole.
func TestAdvTLSSendBesideStalledStream(t *testing.T) {
	streams := make(chan *h2.Stream, 2)
	dial := startAdvTLS(t, &h2.Server{}, detacher(t, streams, func() {}))
	c := dial(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	_ = c.fr.WriteWindowUpdate(0, 1<<31-1-65535)
	c.headers(1, true, advGet("/a")...)
	st1 := <-streams
	c.headers(3, true, advGet("/b")...)
	st3 := <-streams
	big := bytes.Repeat([]byte("a"), 32<<20)
	if err := st1.Send([][]byte{big}, true); err != nil {
		t.Fatal(err)
	}
	if !st1.Stalled() {
		t.Fatal("32 MiB went at once")
	}
	if err := st3.Send([][]byte{[]byte("event-3")}, true); err != nil {
		t.Fatal(err)
	}
	owners := make(chan error, 2)
	go func() { owners <- errors.Join(st1.Flush(false), st1.Close()) }()
	go func() {
		var err error
		if st3.Stalled() {
			err = st3.Flush(false)
		}
		owners <- errors.Join(err, st3.Close())
	}()
	rs := c.awaitAll(1, 3)
	for range 2 {
		if err := <-owners; err != nil {
			t.Error(err)
		}
	}
	if got := len(rs[1].body); got != len(big) || !rs[1].ended {
		t.Errorf("stream 1: %d bytes, want %d", got, len(big))
	}
	if got := string(rs[3].body); got != "event-3" || !rs[3].ended {
		t.Errorf("stream 3: %q, ended %v; want \"event-3\" (st3.Written() = %d)", got, rs[3].ended, st3.Written())
	}
}
