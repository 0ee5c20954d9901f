package server

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/storage/memory"
)

// rawConn is an HTTP/1.1 watch read from a raw socket, chunk by chunk, so
// that the framing itself is checked rather than a client's reading of it.
type rawConn struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
	head *http.Response
}

// dialRawWatch opens a watch of path on ts (over TLS if ts is) and reads
// the response head.
func dialRawWatch(t *testing.T, ts *httptest.Server, path string) *rawConn {
	t.Helper()
	conn := dialRaw(t, ts)
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path)
	r := bufio.NewReader(conn)
	// Only the head goes to ReadResponse: the body is read raw.
	head, err := http.ReadResponse(bufio.NewReader(headOnly(t, r)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &rawConn{t: t, conn: conn, r: r, head: head}
}

// headOnly reads a response head (through the blank line) from r.
func headOnly(t *testing.T, r *bufio.Reader) io.Reader {
	t.Helper()
	var head bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("reading the response head: %v (so far %q)", err, head.String())
		}
		head.WriteString(line)
		if line == "\r\n" {
			return &head
		}
	}
}

// chunk reads one chunk; size 0 is the terminating chunk (with its CRLF).
func (c *rawConn) chunk() []byte {
	c.t.Helper()
	line, err := c.r.ReadString('\n')
	if err != nil {
		c.t.Fatalf("reading a chunk size: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(line, "\r\n"), 16, 64)
	if err != nil || !strings.HasSuffix(line, "\r\n") {
		c.t.Fatalf("chunk size line %q", line)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(c.r, body); err != nil {
		c.t.Fatalf("reading a chunk of %d bytes: %v", n, err)
	}
	if !bytes.HasSuffix(body, []byte("\r\n")) {
		c.t.Fatalf("chunk of %d bytes does not end in CRLF: %q", n, body)
	}
	return body[:n]
}

// events decodes a chunk's JSON lines; a chunk holds whole events.
func (c *rawConn) events(chunk []byte) []api.WatchEvent {
	c.t.Helper()
	if !bytes.HasSuffix(chunk, []byte("\n")) {
		c.t.Fatalf("chunk does not end with a whole event: %q", chunk)
	}
	var out []api.WatchEvent
	for line := range bytes.Lines(chunk) {
		var ev api.WatchEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			c.t.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// ends checks that the next chunk is the terminating one and that the
// server then closes the connection.
func (c *rawConn) ends() {
	c.t.Helper()
	for {
		ch := c.chunk()
		if len(ch) == 0 {
			break
		}
		for _, ev := range c.events(ch) {
			if ev.Type != api.Bookmark {
				c.t.Fatalf("%s event before the end, want only bookmarks", ev.Type)
			}
		}
	}
	if b, err := c.r.ReadByte(); err != io.EOF {
		c.t.Fatalf("after the terminating chunk: byte %q, err %v; want EOF", b, err)
	}
}

func TestWatchHijackedFraming(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	for i := range 3 {
		if code, _ := call(t, ts, "POST", cms, mediaJSON, fmt.Sprintf(`{"metadata":{"name":"f%d"}}`, i)); code != http.StatusCreated {
			t.Fatalf("create: %d", code)
		}
	}
	w := dialRawWatch(t, ts, cms+"?watch=true&timeoutSeconds=1&allowWatchBookmarks=true")
	h := w.head
	if h.StatusCode != 200 || h.Header.Get("Content-Type") != mediaJSON || len(h.TransferEncoding) != 1 || h.TransferEncoding[0] != "chunked" || !h.Close {
		t.Fatalf("head: %d %v, transfer %v, close %v", h.StatusCode, h.Header, h.TransferEncoding, h.Close)
	}
	// The initial state is pending at once: one chunk, one write.
	evs := w.events(w.chunk())
	if len(evs) != 3 {
		t.Fatalf("first chunk has %d events, want the 3 initial ones together", len(evs))
	}
	for i, ev := range evs {
		obj, _ := api.ParseObject(ev.Object)
		if ev.Type != api.Added || obj.Name() != fmt.Sprintf("f%d", i) {
			t.Errorf("initial event %d: %s %s", i, ev.Type, obj.Name())
		}
	}
	// timeoutSeconds: a last bookmark, the terminating chunk, the close.
	w.ends()
}

// TestWatchHijackedEndWithUnreadBytes checks that a client that keeps
// sending after its request (as one pipelining requests may) still reads
// the stream to its terminating chunk and then the connection's end, not
// a reset: the server's reader cannot keep up with the flood, so bytes are
// unread in the server's socket when the watch ends at its timeout.
func TestWatchHijackedEndWithUnreadBytes(t *testing.T) {
	ts, s, _ := newWatchServer(t)
	for name, ts := range map[string]*httptest.Server{"cleartext": ts, "TLS": serveTLS(t, s, false)} {
		t.Run(name, func(t *testing.T) {
			w := dialRawWatch(t, ts, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1")
			stop := flood(t, w.conn, nil)
			w.ends()
			if err := stop(); err != nil {
				t.Errorf("the client's writes failed before it read the stream's end: %v", err)
			}
		})
	}
}

// flood writes to conn from a goroutine of its own, first from and then
// the same bytes over and over, until the stop it returns (also run at the
// test's cleanup), which waits for it: bytes that a server reading a
// little at a time leaves unread in its socket. stop returns the write
// error that ended the flood before it, if any: a reset is one. (The
// client's reads may not see a reset: the write that meets it takes it,
// and they see the end of the stream.)
func flood(t *testing.T, conn net.Conn, first []byte) (stop func() error) {
	quit, done := make(chan struct{}), make(chan struct{})
	var werr error
	go func() {
		defer close(done)
		buf := bytes.Repeat([]byte("GET /pipelined HTTP/1.1\r\n"), 1<<10)
		if _, werr = conn.Write(append(first, buf...)); werr != nil {
			return
		}
		for {
			select {
			case <-quit:
				return
			default:
			}
			if _, werr = conn.Write(buf); werr != nil {
				return
			}
		}
	}()
	stop = sync.OnceValue(func() error {
		close(quit)
		_ = conn.SetWriteDeadline(time.Now()) // ends a write the server does not take
		<-done
		if errors.Is(werr, os.ErrDeadlineExceeded) {
			return nil
		}
		return werr
	})
	t.Cleanup(func() { _ = stop() })
	return stop
}

// waitServerClosed writes a byte at a time to conn, whose stream the
// server has ended, until a write fails with a reset or a broken pipe: the
// server has closed its socket, and its kernel answered the bytes with a
// reset. It fails if that has not happened within within.
func waitServerClosed(t *testing.T, conn net.Conn, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	_ = conn.SetWriteDeadline(deadline)
	for {
		_, err := conn.Write([]byte{0})
		switch {
		case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE):
			return
		case err != nil:
			t.Fatalf("writing to a connection the server should close: %v", err)
		case time.Now().After(deadline):
			t.Fatalf("the server has not closed the connection within %v of the stream's end", within)
		}
		time.Sleep(10 * time.Millisecond) // polling the socket's state; bounded by the deadline
	}
}

// TestWatchEndLingerBounded checks that a client that reads the end of
// its stream but never closes its side holds the server's socket for
// sockwrite.LingerTimeout, not longer: the server then closes it. A chunked watch
// ends at its timeout, a WebSocket at a malformed frame.
func TestWatchEndLingerBounded(t *testing.T) {
	_, writes, servers := wsServers(t)
	start, _ := storageCurrent(t, writes)
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	lingers := func(t *testing.T, conn net.Conn) {
		ended := time.Now()
		waitServerClosed(t, conn, sockwrite.LingerTimeout+10*time.Second)
		if d := time.Since(ended); d < sockwrite.LingerTimeout/2 {
			t.Errorf("the server closed the connection %v after the stream's end, want about %v", d, sockwrite.LingerTimeout)
		}
	}
	for name, ts := range servers {
		if name != "TLS without socketConn" { // its chunked watches stay with net/http
			t.Run("chunked/"+name, func(t *testing.T) {
				t.Parallel()
				w := dialRawWatch(t, ts, path+"&timeoutSeconds=1")
				w.ends()
				lingers(t, w.conn)
			})
		}
		t.Run("WebSocket/"+name, func(t *testing.T) {
			t.Parallel()
			c := dialWS(t, ts, path)
			c.write(clientFrame(0x80|wsText, []byte("hi"), testMask, false))
			c.expectClose(1002, "protocol error")
			lingers(t, c.conn)
		})
	}
}

// TestWatchShutdownWithSilentClients checks that Server.Close, with
// detached watches whose clients neither read nor close their side, ends
// each stream cleanly (a WebSocket's with 1001, going away) and returns
// once their lingers have passed, not at the clients' pleasure, their
// connections closed.
func TestWatchShutdownWithSilentClients(t *testing.T) {
	s, writes, servers := wsServers(t)
	start, _ := storageCurrent(t, writes)
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	var chunked []*rawConn
	var ws []*wsClient
	for name, ts := range servers {
		if name != "TLS without socketConn" { // its chunked watches stay with net/http
			chunked = append(chunked, dialRawWatch(t, ts, path))
		}
		ws = append(ws, dialWS(t, ts, path))
	}
	waitDetached(t, s, len(chunked)+len(ws))
	closed := make(chan struct{})
	begun := time.Now()
	go func() {
		defer close(closed)
		s.Close()
	}()
	t.Cleanup(func() { <-closed })
	select {
	case <-closed:
		t.Logf("Server.Close returned after %v", time.Since(begun))
	case <-time.After(sockwrite.LingerTimeout + 5*time.Second):
		t.Fatalf("Server.Close has not returned %v after it began", time.Since(begun))
	}
	for _, w := range chunked {
		w.ends()
		waitServerClosed(t, w.conn, time.Second)
	}
	for _, c := range ws {
		c.expectClose(1001, "server shutting down")
		waitServerClosed(t, c.conn, time.Second)
	}
}

func TestWatchHijackedEndsAtShutdown(t *testing.T) {
	ts, s, _ := newWatchServer(t)
	w := dialRawWatch(t, ts, "/api/v1/configmaps?watch=true")
	s.Close()
	w.ends()
}

// TestWatchHijackedClientGoneEndsWatch checks that a client closing its
// connection ends the detached stream (no handler's context says so).
func TestWatchHijackedClientGoneEndsWatch(t *testing.T) {
	ended := make(chan slog.Record, 16)
	ts, _ := newLoggedWatchServer(t, ended)
	w := dialRawWatch(t, ts, "/api/v1/namespaces/default/configmaps?watch=true")
	w.conn.Close()
	waitLogged(t, ended, "watch")
}

// waitLogged returns the first access log record of a request with verb.
func waitLogged(t *testing.T, logged <-chan slog.Record, verb string) slog.Record {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case r := <-logged:
			if attr(r, "verb").String() == verb {
				return r
			}
		case <-deadline:
			t.Fatalf("no %s request was logged within 10 s (a full record channel drops lines)", verb)
		}
	}
}

// TestWatchHijackedAccessLog checks that a detached watch is logged when it
// ends, with its bytes.
func TestWatchHijackedAccessLog(t *testing.T) {
	ended := make(chan slog.Record, 16)
	ts, _ := newLoggedWatchServer(t, ended)
	w := dialRawWatch(t, ts, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1")
	w.ends()
	r := waitLogged(t, ended, "watch")
	if code, d := attr(r, "code").Int64(), attr(r, "duration").Duration(); code != 200 || d < time.Second {
		t.Errorf("access log of a watch that lasted 1 s: code %d, duration %v", code, d)
	}
}

// newLoggedWatchServer is newWatchServer whose access log lines go to logged.
func newLoggedWatchServer(t *testing.T, logged chan<- slog.Record) (*httptest.Server, *Server) {
	t.Helper()
	store := memory.New()
	s, err := New(t.Context(), Config{Storage: store, Logger: slog.New(recordHandler(logged))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	return ts, s
}

// attr is r's attribute key.
func attr(r slog.Record, key string) slog.Value {
	var v slog.Value
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == key {
			v = a.Value
			return false
		}
		return true
	})
	return v
}

// recordHandler sends every access log record to a channel, dropping
// them when it is full.
type recordHandler chan<- slog.Record

func (h recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h recordHandler) WithGroup(string) slog.Handler            { return h }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	if r.Message == "request" {
		select {
		case h <- r.Clone():
		default:
		}
	}
	return nil
}

// TestWatchHijackedCurlEndsCleanly: curl --http1.1 exits 0 at the end of a
// watch's timeout, which it does only if the chunked body was terminated.
func TestWatchHijackedCurlEndsCleanly(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		t.Skip("curl is not installed (.ci/run installs it)")
	}
	ts, _, _ := newWatchServer(t)
	call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"c"}}`)
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, curl, "-sS", "-N", "--http1.1", ts.URL+"/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1").Output()
	if err != nil {
		t.Fatalf("curl: %v (%s)", err, out)
	}
	var ev api.WatchEvent
	if err := json.Unmarshal(bytes.TrimSpace(out), &ev); err != nil || ev.Type != api.Added {
		t.Errorf("curl printed %q: %v", out, err)
	}
}

// TestConnSinkNonBlockingWrite checks that a non-blocking send to a client
// that does not read leaves the sink stalled instead of waiting, and that
// a blocking flush, then a blocking send, deliver every byte in order. Over
// TLS, the rest of the send's records wait under the tls.Conn, which sees
// no error.
func TestConnSinkNonBlockingWrite(t *testing.T) {
	for name, connect := range map[string]func(*testing.T) (*connSink, net.Conn){"cleartext": cleartextSink, "tls": tlsSink} {
		t.Run(name, func(t *testing.T) {
			sink, client := connect(t)
			sink.nonblocking = true
			// Objects far larger than loopback's socket buffers, in many pieces.
			var items []watchcache.Item
			var want bytes.Buffer
			for i := range 300 {
				obj := []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 64<<10)))
				items = append(items, watchcache.Item{Type: api.Modified, Object: obj})
				want.WriteString(`{"type":"MODIFIED","object":` + string(obj) + "}\n")
			}
			if err := sink.send(&watchEncoder{}, items); err != nil {
				t.Fatal(err)
			}
			if !sink.stalled() {
				t.Fatal("a 19 MB chunk to a client that does not read is written whole without blocking")
			}
			got := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(client)
				got <- b
			}()
			sink.nonblocking = false
			if err := sink.flush(); err != nil {
				t.Fatal(err)
			}
			if sink.stalled() {
				t.Fatal("stalled after a blocking flush")
			}
			last := []byte(`{"n":"last"}`)
			if err := sink.send(&watchEncoder{}, []watchcache.Item{{Type: api.Added, Object: last}}); err != nil {
				t.Fatalf("a send after a stalled one: %v", err)
			}
			sink.conn.Close()
			r := &rawConn{t: t, r: bufio.NewReader(bytes.NewReader(<-got))}
			if body := r.chunk(); !bytes.Equal(body, want.Bytes()) {
				t.Fatalf("the chunk's %d bytes differ from the %d sent", len(body), want.Len())
			}
			if body, want := r.chunk(), `{"type":"ADDED","object":`+string(last)+"}\n"; string(body) != want {
				t.Fatalf("the last chunk is %q, want %q", body, want)
			}
		})
	}
}

// cleartextSink is a sink on an accepted TCP connection, and its client.
func cleartextSink(t *testing.T) (*connSink, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return &connSink{conn: conn, raw: sockwrite.NewWriter(raw)}, client
}

// tlsSink is a sink on a TLS connection accepted through Listener, and
// its client.
func tlsSink(t *testing.T) (*connSink, net.Conn) {
	ca := authntest.NewCA(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := tls.NewListener(Listener(tcp), &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}})
	defer ln.Close()
	type result struct {
		c   net.Conn
		err error
	}
	accepted := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			err = c.(*tls.Conn).Handshake()
		}
		accepted <- result{c, err}
	}()
	client, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err) // the deferred close ends the Accept
	}
	t.Cleanup(func() { client.Close() })
	r := <-accepted
	if r.err != nil {
		t.Fatal(r.err)
	}
	conn := r.c.(*tls.Conn)
	return &connSink{conn: conn, sock: conn.NetConn().(*socketConn)}, client
}

// TestConnSinkSendAllocs: a send of several events (a chunk of many
// pieces, 16 KiB, over MaxKeptBytes) to a client that reads allocates
// nothing once warm, in cleartext and over TLS (whose pieces are copied
// together for one tls.Conn.Write).
func TestConnSinkSendAllocs(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's sync.Pool drops what is put at random")
	}
	for name, connect := range map[string]func(*testing.T) (*connSink, net.Conn){"cleartext": cleartextSink, "tls": tlsSink} {
		t.Run(name, func(t *testing.T) {
			sink, client := connect(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = io.Copy(io.Discard, client)
			}()
			t.Cleanup(func() { sink.conn.Close(); <-done })
			items := make([]watchcache.Item, 12)
			for i := range items {
				items[i] = watchcache.Item{Type: api.Modified, Object: []byte(`{"pad":"` + strings.Repeat("x", 1300) + `"}`)}
			}
			e := &watchEncoder{}
			if allocs := testing.AllocsPerRun(50, func() {
				if err := sink.send(e, items); err != nil {
					t.Fatal(err)
				}
			}); allocs != 0 {
				t.Errorf("%v allocations per send, want 0", allocs)
			}
		})
	}
}

// TestSocketConnClosesItsDescriptor: a TLS watch's socket, written through
// a descriptor of its own, is closed with its connection: by Close, or,
// when a write holds the socket's lock then, as that write releases it.
// Its client then reads the stream's end, where a descriptor left open
// would keep the socket open past the client's read deadline; and a send
// after the close fails, though a new connection may have the numbers.
func TestSocketConnClosesItsDescriptor(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprint("held=", held), func(t *testing.T) {
			sink, client := tlsSink(t)
			sink.nonblocking = true
			if err := sink.send(&watchEncoder{}, []watchcache.Item{{Type: api.Added, Object: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
			sock := sink.sock
			sock.mu.Lock()
			if sock.fd < 0 {
				t.Fatal("a non-blocking send made no descriptor of the socket's own")
			}
			if !held {
				sock.mu.Unlock()
			}
			if err := sock.Close(); err != nil {
				t.Fatal(err)
			}
			if held {
				sock.unlock() // the write's release
			}
			if err := client.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(client); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the socket is still open after its connection's close")
			}
			if sock.fd >= 0 {
				t.Errorf("descriptor %d still open", sock.fd)
			}
			other, _ := cleartextSink(t) // may be given the closed numbers
			if err := sink.send(&watchEncoder{}, []watchcache.Item{{Type: api.Added, Object: []byte(`{}`)}}); err == nil {
				t.Errorf("a send after the close wrote (to %v?)", other.conn.LocalAddr())
			}
		})
	}
}
