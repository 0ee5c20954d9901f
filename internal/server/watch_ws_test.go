package server

import (
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/internal/watchstream"
	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
)

// dialRaw connects to ts, over TLS (HTTP/1.1 by ALPN) if ts is.
func dialRaw(t *testing.T, ts *httptest.Server) net.Conn {
	t.Helper()
	addr := ts.Listener.Addr().String()
	var conn net.Conn
	var err error
	if ts.TLS != nil {
		conn, err = tls.Dial("tcp", addr, http1TLS(ts))
	} else {
		conn, err = net.Dial("tcp", addr)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// dialWS opens a WebSocket watch of path on ts.
func dialWS(t *testing.T, ts *httptest.Server, path string) *streamtest.WSClient {
	t.Helper()
	return streamtest.DialWS(t, dialRaw(t, ts), path)
}

// wsServers is a watch server served in cleartext, over TLS on a
// Listener (socketConn) and over TLS without one; writes go to the
// cleartext one.
func wsServers(t *testing.T) (*Server, *httptest.Server, map[string]*httptest.Server) {
	ts, s, _ := newWatchServer(t)
	plain := httptest.NewUnstartedServer(s.Handler())
	plain.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	plain.StartTLS()
	t.Cleanup(plain.Close)
	return s, ts, map[string]*httptest.Server{"cleartext": ts, "TLS": serveTLS(t, s, false), "TLS without socketConn": plain}
}

// waitDetached waits until s streams n detached watches.
func waitDetached(t *testing.T, s *Server, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.streams.Watches() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d detached watches, want %d", s.streams.Watches(), n)
		}
		time.Sleep(5 * time.Millisecond) // polling a count; bounded by the deadline
	}
}

// TestWebSocketMalformedFrames checks that a client breaking RFC 6455 is
// closed with 1002 (1009 for a message beyond watchstream.MaxWebSocketMessage) and the
// connection ended, and that the server serves WebSocket watches after.
func TestWebSocketMalformedFrames(t *testing.T) {
	s, writes, servers := wsServers(t)
	tests := []struct {
		name  string
		frame []byte
		code  uint16
	}{
		{"unmasked", streamtest.WSFrame(0x80|streamtest.OpText, []byte("hi"), streamtest.Mask, false), 1002},
		{"oversized control", streamtest.WSFrame(0x80|streamtest.OpPing, make([]byte, 126), streamtest.Mask, true), 1002},
		{"fragmented control", streamtest.WSFrame(streamtest.OpPing, nil, streamtest.Mask, true), 1002},
		{"bad opcode", streamtest.WSFrame(0x83, nil, streamtest.Mask, true), 1002},
		{"reserved bit", streamtest.WSFrame(0xC0|streamtest.OpText, []byte("x"), streamtest.Mask, true), 1002},
		{"continuation of nothing", streamtest.WSFrame(0x80|streamtest.OpContinuation, []byte("x"), streamtest.Mask, true), 1002},
		{"new message inside one", append(streamtest.WSFrame(streamtest.OpText, []byte("x"), streamtest.Mask, true), streamtest.WSFrame(0x80|streamtest.OpBinary, nil, streamtest.Mask, true)...), 1002},
		{"close of one byte", streamtest.WSFrame(0x80|streamtest.OpClose, []byte{3}, streamtest.Mask, true), 1002},
		{"close with 1005", streamtest.WSFrame(0x80|streamtest.OpClose, binary.BigEndian.AppendUint16(nil, 1005), streamtest.Mask, true), 1002},
		{"close with code 999", streamtest.WSFrame(0x80|streamtest.OpClose, binary.BigEndian.AppendUint16(nil, 999), streamtest.Mask, true), 1002},
		{"close reason not UTF-8", streamtest.WSFrame(0x80|streamtest.OpClose, append(binary.BigEndian.AppendUint16(nil, 1000), 0xff, 0xfe), streamtest.Mask, true), 1002},
		{"message too big", streamtest.WSFrame(0x80|streamtest.OpBinary, make([]byte, watchstream.MaxWebSocketMessage+1), streamtest.Mask, true)[:14], 1009},
		{"text not UTF-8", streamtest.WSFrame(0x80|streamtest.OpText, []byte("caf\xe9"), streamtest.Mask, true), 1007},
		{"text ending inside a character", append(streamtest.WSFrame(streamtest.OpText, []byte("caf\xc3"), streamtest.Mask, true), streamtest.WSFrame(0x80|streamtest.OpContinuation, nil, streamtest.Mask, true)...), 1007},
	}
	reason := map[uint16]string{1002: "protocol error", 1007: "invalid UTF-8", 1009: "message too big"}
	start, _ := storageCurrent(t, writes)
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	for name, ts := range servers {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				c := dialWS(t, ts, path)
				c.Write(streamtest.WSFrame(0x80|streamtest.OpText, []byte("ignored"), streamtest.Mask, true)) // data is read and discarded
				c.Write(tt.frame)
				c.ExpectClose(tt.code, reason[tt.code])
				waitDetached(t, s, 0)
			})
		}
	}
	c := dialWS(t, servers["TLS"], path)
	c.Write(streamtest.WSFrame(streamtest.OpText, []byte("caf\xc3"), streamtest.Mask, true)) // é split between two frames: UTF-8
	c.Write(streamtest.WSFrame(0x80|streamtest.OpContinuation, []byte("\xa9"), streamtest.Mask, true))
	if code, _ := call(t, writes, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"after"}}`); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if op, p := c.Read(); op != streamtest.OpText || !bytes.Contains(p, []byte(`"name":"after"`)) {
		t.Fatalf("after the malformed frames, a watch got %x %q", op, p)
	}
}

// TestWebSocketCloseWithUnreadBytes checks that a client that sends a
// malformed frame with a flood of bytes after it, in the same write and
// on, so that bytes are unread in the server's socket when it ends the
// watch, still reads the close frame with its status,
// then the connection's end, not a reset.
func TestWebSocketCloseWithUnreadBytes(t *testing.T) {
	s, writes, servers := wsServers(t)
	start, _ := storageCurrent(t, writes)
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	for name, ts := range servers {
		t.Run(name, func(t *testing.T) {
			c := dialWS(t, ts, path)
			stop := flood(t, c.Conn, streamtest.WSFrame(0xC0|streamtest.OpText, []byte("x"), streamtest.Mask, true)) // a reserved bit
			c.ExpectClose(1002, "protocol error")
			if err := stop(); err != nil {
				t.Errorf("the client's writes failed before it read the close frame: %v", err)
			}
			waitDetached(t, s, 0)
		})
	}
}

// TestWebSocketBadHandshake checks that an upgrade RFC 6455 does not
// allow is answered 400 with a Status, and no watch starts.
func TestWebSocketBadHandshake(t *testing.T) {
	ts, s, _ := newWatchServer(t)
	for _, tt := range []struct {
		name    string
		headers map[string]string
	}{
		{"no key", map[string]string{"Sec-WebSocket-Key": ""}},
		{"a key not of 16 bytes", map[string]string{"Sec-WebSocket-Key": "c2hvcnQ="}},
		{"version 8", map[string]string{"Sec-WebSocket-Version": "8"}},
		{"no version", map[string]string{"Sec-WebSocket-Version": ""}},
		{"no Connection: Upgrade", map[string]string{"Connection": "keep-alive"}},
		{"two subprotocols", map[string]string{"Sec-WebSocket-Protocol": "base64.binary.k8s.io, v4.channel.k8s.io"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, _ := streamtest.Upgrade(t, dialRaw(t, ts), "/api/v1/namespaces/default/configmaps?watch=true", tt.headers)
			body, _ := io.ReadAll(resp.Body)
			var st api.Status
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &st) != nil || st.Kind != "Status" || st.Code != 400 {
				t.Errorf("answered %s %s, want a 400 Status", resp.Status, body)
			}
		})
	}
	if n := s.streams.Watches(); n != 0 {
		t.Errorf("%d watches started", n)
	}
}

// TestWebSocketIdleWatchesGoroutines checks that an idle WebSocket watch
// costs one goroutine, its reader: the engine's senders serve it, and no
// handler stays behind. It counts the engine's goroutines and the
// handlers', not the process's, which other tests' servers share.
func TestWebSocketIdleWatchesGoroutines(t *testing.T) {
	ts, s, _ := newWatchServer(t)
	start, _ := storageCurrent(t, ts)
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	dialWS(t, ts, path) // starts the senders
	waitDetached(t, s, 1)
	idle := func(watches int) bool {
		return s.streams.Watches() == watches && s.streams.Goroutines() == senders()+watches
	}
	testwait.Until(t, 10*time.Second, "the first watch idle", func() bool { return idle(1) })
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	const n = 100
	for range n {
		dialWS(t, ts, path)
	}
	testwait.Until(t, 10*time.Second, fmt.Sprintf("%d idle watches with one goroutine each", n+1), func() bool { return idle(n + 1) })
	testwait.Until(t, 10*time.Second, "no watch handler left", func() bool { return watchHandlers() == 0 })
	runtime.GC()
	runtime.ReadMemStats(&m1)
	t.Logf("%d idle WebSocket watches: %.0f bytes of heap and %.0f of stacks each (the client's side included)",
		n, float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/n, float64(int64(m1.StackInuse)-int64(m0.StackInuse))/n)
}

// senders is the engine's pool of senders, by its rule (one fewer than the
// processors).
func senders() int { return max(1, runtime.GOMAXPROCS(0)-1) }

// watchHandlers is how many goroutines of the process are in a watch's
// handler.
func watchHandlers() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return bytes.Count(buf[:n], []byte("server.(*request).watch("))
		}
		buf = make([]byte, 2*len(buf))
	}
}
