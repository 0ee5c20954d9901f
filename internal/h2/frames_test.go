package h2_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/listwatch/listwatch/internal/h2"
)

// rawClient speaks HTTP/2 frame by frame to a test server.
type rawClient struct {
	t    *testing.T
	conn net.Conn
	fr   *http2.Framer
	hbuf bytes.Buffer
	henc *hpack.Encoder
}

func dialRaw(t *testing.T, ts *testServer) *rawClient {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(20 * time.Second))
	c := &rawClient{t: t, conn: conn, fr: http2.NewFramer(conn, conn)}
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	if _, err := io.WriteString(conn, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := c.fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	return c
}

// headers encodes a request's fields, pseudo-headers first.
func (c *rawClient) headers(fields ...string) []byte {
	c.hbuf.Reset()
	for i := 0; i+1 < len(fields); i += 2 {
		_ = c.henc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
	}
	return bytes.Clone(c.hbuf.Bytes())
}

func (c *rawClient) get(id uint32, path string) {
	c.t.Helper()
	block := c.headers(":method", "GET", ":scheme", "http", ":path", path, ":authority", "x")
	if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true}); err != nil {
		c.t.Fatal(err)
	}
}

// until reads frames until match returns true, or fails at EOF.
func (c *rawClient) until(what string, match func(http2.Frame) bool) http2.Frame {
	c.t.Helper()
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			c.t.Fatalf("waiting for %s: %v", what, err)
		}
		if match(f) {
			return f
		}
	}
}

func (c *rawClient) goAway(code http2.ErrCode) {
	c.t.Helper()
	f := c.until("GOAWAY", func(f http2.Frame) bool { _, ok := f.(*http2.GoAwayFrame); return ok }).(*http2.GoAwayFrame)
	if f.ErrCode != code {
		c.t.Errorf("GOAWAY %v, want %v", f.ErrCode, code)
	}
}

func (c *rawClient) reset(id uint32, code http2.ErrCode) {
	c.t.Helper()
	f := c.until("RST_STREAM", func(f http2.Frame) bool {
		r, ok := f.(*http2.RSTStreamFrame)
		return ok && r.StreamID == id
	}).(*http2.RSTStreamFrame)
	if f.ErrCode != code {
		c.t.Errorf("RST_STREAM %v, want %v", f.ErrCode, code)
	}
}

func (c *rawClient) response(id uint32) string {
	c.t.Helper()
	var status string
	c.until("the response", func(f http2.Frame) bool {
		switch f := f.(type) {
		case *http2.MetaHeadersFrame:
			if f.StreamID == id {
				status = f.PseudoValue("status")
				return f.StreamEnded()
			}
		case *http2.DataFrame:
			return f.StreamID == id && f.StreamEnded()
		case *http2.RSTStreamFrame:
			if f.StreamID == id {
				c.t.Fatalf("stream %d reset: %v", id, f.ErrCode)
			}
		}
		return false
	})
	return status
}

func TestMalformed(t *testing.T) {
	ts := newTestServer(t, false, http.HandlerFunc(echo))
	cases := []struct {
		name string
		send func(c *rawClient) error
		// want: a connection error with this code, or a stream reset of stream 1.
		conn   bool
		code   http2.ErrCode
		stream uint32
	}{
		{"even stream", func(c *rawClient) error {
			return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 2, BlockFragment: c.headers(":method", "GET", ":scheme", "http", ":path", "/"), EndStream: true, EndHeaders: true})
		}, true, http2.ErrCodeProtocol, 0},
		{"DATA on an idle stream", func(c *rawClient) error { return c.fr.WriteData(5, true, []byte("x")) }, true, http2.ErrCodeProtocol, 0},
		{"missing path", func(c *rawClient) error {
			return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.headers(":method", "GET", ":scheme", "http"), EndStream: true, EndHeaders: true})
		}, false, http2.ErrCodeProtocol, 1},
		{"uppercase header", func(c *rawClient) error {
			return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.headers(":method", "GET", ":scheme", "http", ":path", "/", "X-Up", "1"), EndStream: true, EndHeaders: true})
		}, false, http2.ErrCodeProtocol, 1},
		{"connection header", func(c *rawClient) error {
			return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.headers(":method", "GET", ":scheme", "http", ":path", "/", "connection", "close"), EndStream: true, EndHeaders: true})
		}, false, http2.ErrCodeProtocol, 1},
		{"bad hpack", func(c *rawClient) error {
			return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0xff, 0xff, 0xff, 0xff}, EndStream: true, EndHeaders: true})
		}, true, http2.ErrCodeCompression, 0},
		{"window overflow", func(c *rawClient) error { return c.fr.WriteWindowUpdate(0, 1<<31-1) }, true, http2.ErrCodeFlowControl, 0},
		{"zero window update", func(c *rawClient) error { return c.fr.WriteRawFrame(http2.FrameWindowUpdate, 0, 0, []byte{0, 0, 0, 0}) }, true, http2.ErrCodeProtocol, 0},
		{"PUSH_PROMISE", func(c *rawClient) error {
			return c.fr.WritePushPromise(http2.PushPromiseParam{StreamID: 1, PromiseID: 2, EndHeaders: true})
		}, true, http2.ErrCodeProtocol, 0},
		{"RST_STREAM on an idle stream", func(c *rawClient) error { return c.fr.WriteRSTStream(7, http2.ErrCodeCancel) }, true, http2.ErrCodeProtocol, 0},
		{"content-length mismatch", func(c *rawClient) error {
			err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: c.headers(":method", "POST", ":scheme", "http", ":path", "/", "content-length", "10"), EndHeaders: true})
			return errors.Join(err, c.fr.WriteData(1, true, []byte("short")))
		}, false, http2.ErrCodeProtocol, 1},
		{"bad frame size", func(c *rawClient) error { return c.fr.WriteRawFrame(http2.FramePing, 0, 0, []byte("short")) }, true, http2.ErrCodeFrameSize, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := dialRaw(t, ts)
			if err := tc.send(c); err != nil {
				t.Fatal(err)
			}
			if tc.conn {
				c.goAway(tc.code)
				return
			}
			c.reset(tc.stream, tc.code)
			c.get(3, "/after") // the connection still serves
			if got := c.response(3); got != "200" {
				t.Errorf("after the reset: status %s", got)
			}
		})
	}
}

func TestRefusedStream(t *testing.T) {
	release := make(chan struct{})
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-release }))
	ts.h2.MaxConcurrentStreams = 2
	defer close(release)
	c := dialRaw(t, ts)
	c.get(1, "/")
	c.get(3, "/")
	c.get(5, "/")
	c.reset(5, http2.ErrCodeRefusedStream)
}

func TestRapidReset(t *testing.T) {
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	c := dialRaw(t, ts)
	go func() { // the server's answers are read below
		block := c.headers(":method", "GET", ":scheme", "http", ":path", "/", ":authority", "x")
		for id := uint32(1); id < 2*2000; id += 2 {
			err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndStream: true, EndHeaders: true})
			if errors.Join(err, c.fr.WriteRSTStream(id, http2.ErrCodeCancel)) != nil {
				return // the server has ended the connection
			}
		}
	}()
	c.goAway(http2.ErrCodeEnhanceYourCalm)
}

func TestPingAndSettings(t *testing.T) {
	ts := newTestServer(t, false, http.HandlerFunc(echo))
	c := dialRaw(t, ts)
	if err := c.fr.WritePing(false, [8]byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	c.until("PING ack", func(f http2.Frame) bool {
		p, ok := f.(*http2.PingFrame)
		return ok && p.IsAck() && p.Data == [8]byte{1, 2, 3}
	})
	// A window of 10 bytes per stream: the response comes in pieces as
	// the window grows.
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 10}); err != nil {
		t.Fatal(err)
	}
	c.until("SETTINGS ack", func(f http2.Frame) bool { s, ok := f.(*http2.SettingsFrame); return ok && s.IsAck() })
	body := strings.Repeat("z", 25)
	block := c.headers(":method", "POST", ":scheme", "http", ":path", "/")
	_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block, EndHeaders: true})
	_ = c.fr.WriteData(1, true, []byte(body))
	var got []byte
	c.until("the response body", func(f http2.Frame) bool {
		d, ok := f.(*http2.DataFrame)
		if !ok || d.StreamID != 1 {
			return false
		}
		got = append(got, d.Data()...)
		if len(d.Data()) > 10 {
			t.Errorf("DATA of %d bytes, beyond the window", len(d.Data()))
		}
		if !d.StreamEnded() && len(d.Data()) > 0 {
			_ = c.fr.WriteWindowUpdate(1, uint32(len(d.Data())))
		}
		return d.StreamEnded()
	})
	if string(got) != body {
		t.Errorf("body %q", got)
	}
}

// TestSettingsAckFirst: a SETTINGS frame that opens the windows of
// streams waiting to send is acknowledged before any DATA it let through
// (h2spec 6.9.2/1 waits for the ACK, then for the DATA, so a DATA frame
// written before the ACK was lost to it).
func TestSettingsAckFirst(t *testing.T) {
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("hello"))
	}))
	c := dialRaw(t, ts)
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 0}); err != nil {
		t.Fatal(err)
	}
	c.until("SETTINGS ack", func(f http2.Frame) bool { s, ok := f.(*http2.SettingsFrame); return ok && s.IsAck() })
	const streams = 50
	for id := uint32(1); id < 2*streams; id += 2 {
		c.get(id, "/")
	}
	heads := 0
	c.until("every response's HEADERS", func(f http2.Frame) bool {
		if _, ok := f.(*http2.MetaHeadersFrame); ok {
			heads++
		}
		return heads == streams
	})
	if err := c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1}); err != nil {
		t.Fatal(err)
	}
	f, err := c.fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := f.(*http2.SettingsFrame); !ok || !s.IsAck() {
		t.Fatalf("first frame after SETTINGS: %v, want its ACK", f.Header())
	}
	for range streams {
		c.until("a 1-byte DATA", func(f http2.Frame) bool { d, ok := f.(*http2.DataFrame); return ok && len(d.Data()) == 1 })
	}
}

// TestShutdownGoAway: Shutdown sends GOAWAY at once and lets the stream
// in flight finish; then the connection closes.
func TestShutdownGoAway(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	c := dialRaw(t, ts)
	c.get(1, "/")
	<-started // a stream the server has not read when it goes away is not served (the GOAWAY says so)
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- ts.Config.Shutdown(ctx)
	}()
	c.goAway(http2.ErrCodeNo)
	close(release)
	if got := c.response(1); got != "200" {
		t.Errorf("in-flight stream: status %s", got)
	}
	if _, err := c.fr.ReadFrame(); !errors.Is(err, io.EOF) {
		t.Errorf("after the last stream: %v, want EOF", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestDetachStalled sends more than the socket takes at once, to a client
// that does not read yet: the send does not wait, the stream is stalled,
// and the stream's owner finishes it with a blocking Flush once the client
// reads; every byte arrives, in order.
func TestDetachStalled(t *testing.T) {
	streams := make(chan *h2.Stream, 1)
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		st, err := w.(h2.Detacher).Detach(func() {})
		if err != nil {
			t.Error(err)
			return
		}
		streams <- st
	}))
	c := dialRaw(t, ts)
	const size = 16 << 20 // beyond loopback's socket buffers
	if err := errors.Join(
		c.fr.WriteSettings(http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1}),
		c.fr.WriteWindowUpdate(0, 1<<31-1-65535),
	); err != nil {
		t.Fatal(err)
	}
	c.get(1, "/")
	st := <-streams
	want := make([]byte, size)
	for i := range want {
		want[i] = byte(i % 251)
	}
	if err := st.Send([][]byte{want[:size/2], want[size/2:]}, true); err != nil {
		t.Fatal(err)
	}
	if !st.Stalled() {
		t.Fatal("16 MiB went to the socket at once")
	}
	done := make(chan error, 1)
	go func() { // the stream's owner
		done <- errors.Join(st.Flush(false), st.Close())
	}()
	var got []byte
	c.until("the end of the stream", func(f http2.Frame) bool {
		d, ok := f.(*http2.DataFrame)
		if ok && d.StreamID == 1 {
			got = append(got, d.Data()...)
			return d.StreamEnded()
		}
		return false
	})
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("got %d bytes, want %d, in order", len(got), len(want))
	}
}

// TestPeerMaxFrameSize: DATA frames stay within the client's
// SETTINGS_MAX_FRAME_SIZE once it raises it.
func TestPeerMaxFrameSize(t *testing.T) {
	body := strings.Repeat("m", 100<<10)
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, body)
	}))
	c := dialRaw(t, ts)
	const frame = 32 << 10
	c.fr.SetMaxReadFrameSize(frame)
	if err := errors.Join(
		c.fr.WriteSettings(http2.Setting{ID: http2.SettingMaxFrameSize, Val: frame}, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1 << 20}),
		c.fr.WriteWindowUpdate(0, 1<<20),
	); err != nil {
		t.Fatal(err)
	}
	c.get(1, "/")
	var got, largest int
	c.until("the body", func(f http2.Frame) bool {
		d, ok := f.(*http2.DataFrame)
		if !ok {
			return false
		}
		got += len(d.Data())
		largest = max(largest, len(d.Data()))
		return d.StreamEnded()
	})
	if got != len(body) || largest > frame || largest <= 16384 {
		t.Errorf("%d bytes in frames of at most %d, want %d in frames above 16 KiB and at most %d", got, largest, len(body), frame)
	}
}
