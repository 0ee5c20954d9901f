package server

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
	"github.com/listwatch/listwatch/storage/memory"
)

// dialRawWatch opens a watch of path on ts (over TLS if ts is) and reads
// the response head.
func dialRawWatch(t *testing.T, ts *httptest.Server, path string) *streamtest.Chunks {
	t.Helper()
	return streamtest.OpenWatch(t, dialRaw(t, ts), path)
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
	h := w.Head
	if h.StatusCode != 200 || h.Header.Get("Content-Type") != mediaJSON || len(h.TransferEncoding) != 1 || h.TransferEncoding[0] != "chunked" || !h.Close {
		t.Fatalf("head: %d %v, transfer %v, close %v", h.StatusCode, h.Header, h.TransferEncoding, h.Close)
	}
	// The initial state is pending at once: one chunk, one write.
	evs := w.Events(w.Chunk())
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
	w.Ends()
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
			stop := flood(t, w.Conn, nil)
			w.Ends()
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
				w.Ends()
				lingers(t, w.Conn)
			})
		}
		t.Run("WebSocket/"+name, func(t *testing.T) {
			t.Parallel()
			c := dialWS(t, ts, path)
			c.Write(streamtest.WSFrame(0x80|streamtest.OpText, []byte("hi"), streamtest.Mask, false))
			c.ExpectClose(1002, "protocol error")
			lingers(t, c.Conn)
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
	var chunked []*streamtest.Chunks
	var ws []*streamtest.WSClient
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
		w.Ends()
		waitServerClosed(t, w.Conn, time.Second)
	}
	for _, c := range ws {
		c.ExpectClose(1001, "server shutting down")
		waitServerClosed(t, c.Conn, time.Second)
	}
}

func TestWatchHijackedEndsAtShutdown(t *testing.T) {
	ts, s, _ := newWatchServer(t)
	w := dialRawWatch(t, ts, "/api/v1/configmaps?watch=true")
	s.Close()
	w.Ends()
}

// TestWatchHijackedClientGoneEndsWatch checks that a client closing its
// connection ends the detached stream (no handler's context says so).
func TestWatchHijackedClientGoneEndsWatch(t *testing.T) {
	ended := make(chan slog.Record, 16)
	ts, _ := newLoggedWatchServer(t, ended)
	w := dialRawWatch(t, ts, "/api/v1/namespaces/default/configmaps?watch=true")
	w.Conn.Close()
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
	w.Ends()
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
