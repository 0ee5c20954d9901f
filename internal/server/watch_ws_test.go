package server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/listwatch/listwatch/client/api"
)

// wsClient is a bare WebSocket client on one connection, which starts no
// goroutine: it writes the frames it is given (masked or not, well formed
// or not) and reads the server's.
type wsClient struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// rfcKey and rfcAccept are RFC 6455's example handshake (section 1.3).
const (
	rfcKey    = "dGhlIHNhbXBsZSBub25jZQ=="
	rfcAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
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

// upgrade sends a WebSocket handshake for path with headers (a value ""
// leaves the header out) and returns the server's answer.
func upgrade(t *testing.T, conn net.Conn, path string, headers map[string]string) (*http.Response, *bufio.Reader) {
	t.Helper()
	h := map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": rfcKey}
	for k, v := range headers {
		h[k] = v
	}
	var req strings.Builder
	fmt.Fprintf(&req, "GET %s HTTP/1.1\r\nHost: listwatch\r\n", path)
	for k, v := range h {
		if v != "" {
			fmt.Fprintf(&req, "%s: %s\r\n", k, v)
		}
	}
	req.WriteString("\r\n")
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(conn, req.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	return resp, br
}

// dialWS opens a WebSocket watch of path on ts.
func dialWS(t *testing.T, ts *httptest.Server, path string) *wsClient {
	t.Helper()
	conn := dialRaw(t, ts)
	resp, br := upgrade(t, conn, path, nil)
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != rfcAccept {
		t.Fatalf("handshake answered %s, Sec-WebSocket-Accept %q", resp.Status, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	return &wsClient{t: t, conn: conn, br: br}
}

// clientFrame is a frame whose first byte is b0 (FIN, RSV, opcode),
// masked with mask if masked.
func clientFrame(b0 byte, payload []byte, mask [4]byte, masked bool) []byte {
	b := []byte{b0}
	var m byte
	if masked {
		m = 0x80
	}
	switch n := len(payload); {
	case n <= 125:
		b = append(b, m|byte(n))
	case n <= 0xffff:
		b = binary.BigEndian.AppendUint16(append(b, m|126), uint16(n))
	default:
		b = binary.BigEndian.AppendUint64(append(b, m|127), uint64(n))
	}
	if !masked {
		return append(b, payload...)
	}
	b = append(b, mask[:]...)
	for i, c := range payload {
		b = append(b, c^mask[i%4])
	}
	return b
}

var testMask = [4]byte{0x37, 0xfa, 0x21, 0x3d}

func (c *wsClient) write(b []byte) {
	c.t.Helper()
	_ = c.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.conn.Write(b); err != nil {
		c.t.Fatal(err)
	}
}

// read reads one of the server's frames, which must be final and
// unmasked.
func (c *wsClient) read() (op byte, payload []byte) {
	c.t.Helper()
	_ = c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	h := make([]byte, 2, 10)
	if _, err := io.ReadFull(c.br, h); err != nil {
		c.t.Fatalf("reading a frame: %v", err)
	}
	if h[0]&0xf0 != 0x80 || h[1]&0x80 != 0 {
		c.t.Fatalf("frame header %x: want FIN, no RSV bits, unmasked", h)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		h = h[:4]
		_, _ = io.ReadFull(c.br, h[2:])
		n = uint64(binary.BigEndian.Uint16(h[2:]))
	case 127:
		h = h[:10]
		_, _ = io.ReadFull(c.br, h[2:])
		n = binary.BigEndian.Uint64(h[2:])
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.br, payload); err != nil {
		c.t.Fatalf("reading a frame's payload: %v", err)
	}
	return h[0] & 0x0f, payload
}

// expectClose reads the server's close frame, wants status code and
// reason, and then the connection's end.
func (c *wsClient) expectClose(code uint16, reason string) {
	c.t.Helper()
	op, p := c.read()
	if op != wsClose || len(p) < 2 || binary.BigEndian.Uint16(p) != code || string(p[2:]) != reason {
		c.t.Fatalf("got frame %x %q, want a close %d %q", op, p, code, reason)
	}
	if _, err := c.br.ReadByte(); err != io.EOF {
		c.t.Fatalf("after the close frame: %v, want the connection's end", err)
	}
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
	for detachedWatches(s) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d detached watches, want %d", detachedWatches(s), n)
		}
		time.Sleep(5 * time.Millisecond) // polling a count; bounded by the deadline
	}
}

// TestWebSocketPingEventClose checks a detached WebSocket watch's wire:
// a client's ping answered by a pong with its payload, an event as one
// text message without the newline, a ping due (as the watch's timer
// marks it every wsPingInterval) sent as a ping frame, the client's pong
// needing nothing, and the client's close answered by the close frame
// that ends the watch.
func TestWebSocketPingEventClose(t *testing.T) {
	s, writes, servers := wsServers(t)
	for name, ts := range servers {
		t.Run(name, func(t *testing.T) {
			start, _ := storageCurrent(t, writes)
			c := dialWS(t, ts, fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start))
			waitDetached(t, s, 1)
			c.write(clientFrame(0x80|wsPing, []byte("are you there"), testMask, true))
			if op, p := c.read(); op != wsPong || string(p) != "are you there" {
				t.Fatalf("got frame %x %q, want the pong", op, p)
			}
			name := "ws-" + strings.ReplaceAll(strings.ToLower(name), " ", "-")
			if code, _ := call(t, writes, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"`+name+`"}}`); code != 201 {
				t.Fatalf("create: %d", code)
			}
			op, p := c.read()
			var ev api.WatchEvent
			if op != wsText || bytes.HasSuffix(p, []byte("\n")) || json.Unmarshal(p, &ev) != nil || ev.Type != api.Added {
				t.Fatalf("got frame %x %q, want the ADDED event as a text message without a newline", op, p)
			}
			s.streams.mu.Lock()
			for d := range s.streams.live {
				d.mu.Lock()
				d.pingTick() // what d.pinger does every wsPingInterval
				d.wakeLocked()
				d.mu.Unlock()
			}
			s.streams.mu.Unlock()
			if op, p := c.read(); op != wsPing || len(p) != 0 {
				t.Fatalf("got frame %x %q, want a ping", op, p)
			}
			c.write(clientFrame(0x80|wsPong, nil, testMask, true))
			c.write(clientFrame(0x80|wsClose, binary.BigEndian.AppendUint16(nil, 1000), testMask, true))
			c.expectClose(1000, "watch ended")
			waitDetached(t, s, 0)
		})
	}
}

// TestWebSocketPingUnanswered: a ping the client has not answered by the
// next tick ends its watch (the client is gone), unless the watch is slow
// (its own goroutine serves it: the client may not have read the ping);
// any pong keeps it.
func TestWebSocketPingUnanswered(t *testing.T) {
	for _, tc := range []struct {
		state sendState
		pong  bool
		want  endReason
	}{
		{running, false, endGone},
		{running, true, notEnding},
		{dedicated, false, notEnding},
	} {
		d := &detachedWatch{state: tc.state}
		d.mu.Lock()
		d.pingTick()
		d.mu.Unlock()
		if !d.ping {
			t.Fatalf("%+v: no ping due after the first tick", tc)
		}
		if tc.pong {
			d.pongReceived()
		}
		d.mu.Lock()
		d.pingTick()
		d.mu.Unlock()
		if d.ending != tc.want {
			t.Errorf("state %v, pong %v: ending %v after the second tick, want %v", tc.state, tc.pong, d.ending, tc.want)
		}
	}
}

// TestWebSocketMalformedFrames checks that a client breaking RFC 6455 is
// closed with 1002 (1009 for a message beyond wsMaxMessage) and the
// connection ended, and that the server serves WebSocket watches after.
func TestWebSocketMalformedFrames(t *testing.T) {
	s, writes, servers := wsServers(t)
	tests := []struct {
		name  string
		frame []byte
		code  uint16
	}{
		{"unmasked", clientFrame(0x80|wsText, []byte("hi"), testMask, false), 1002},
		{"oversized control", clientFrame(0x80|wsPing, make([]byte, 126), testMask, true), 1002},
		{"fragmented control", clientFrame(wsPing, nil, testMask, true), 1002},
		{"bad opcode", clientFrame(0x83, nil, testMask, true), 1002},
		{"reserved bit", clientFrame(0xC0|wsText, []byte("x"), testMask, true), 1002},
		{"continuation of nothing", clientFrame(0x80|wsContinuation, []byte("x"), testMask, true), 1002},
		{"new message inside one", append(clientFrame(wsText, []byte("x"), testMask, true), clientFrame(0x80|wsBinary, nil, testMask, true)...), 1002},
		{"close of one byte", clientFrame(0x80|wsClose, []byte{3}, testMask, true), 1002},
		{"close with 1005", clientFrame(0x80|wsClose, binary.BigEndian.AppendUint16(nil, 1005), testMask, true), 1002},
		{"close with code 999", clientFrame(0x80|wsClose, binary.BigEndian.AppendUint16(nil, 999), testMask, true), 1002},
		{"close reason not UTF-8", clientFrame(0x80|wsClose, append(binary.BigEndian.AppendUint16(nil, 1000), 0xff, 0xfe), testMask, true), 1002},
		{"message too big", clientFrame(0x80|wsBinary, make([]byte, wsMaxMessage+1), testMask, true)[:14], 1009},
		{"text not UTF-8", clientFrame(0x80|wsText, []byte("caf\xe9"), testMask, true), 1007},
		{"text ending inside a character", append(clientFrame(wsText, []byte("caf\xc3"), testMask, true), clientFrame(0x80|wsContinuation, nil, testMask, true)...), 1007},
	}
	reason := map[uint16]string{1002: "protocol error", 1007: "invalid UTF-8", 1009: "message too big"}
	start, _ := storageCurrent(t, writes)
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	for name, ts := range servers {
		for _, tt := range tests {
			t.Run(name+"/"+tt.name, func(t *testing.T) {
				c := dialWS(t, ts, path)
				c.write(clientFrame(0x80|wsText, []byte("ignored"), testMask, true)) // data is read and discarded
				c.write(tt.frame)
				c.expectClose(tt.code, reason[tt.code])
				waitDetached(t, s, 0)
			})
		}
	}
	c := dialWS(t, servers["TLS"], path)
	c.write(clientFrame(wsText, []byte("caf\xc3"), testMask, true)) // é split between two frames: UTF-8
	c.write(clientFrame(0x80|wsContinuation, []byte("\xa9"), testMask, true))
	if code, _ := call(t, writes, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"after"}}`); code != 201 {
		t.Fatalf("create: %d", code)
	}
	if op, p := c.read(); op != wsText || !bytes.Contains(p, []byte(`"name":"after"`)) {
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
			stop := flood(t, c.conn, clientFrame(0xC0|wsText, []byte("x"), testMask, true)) // a reserved bit
			c.expectClose(1002, "protocol error")
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
			resp, _ := upgrade(t, dialRaw(t, ts), "/api/v1/namespaces/default/configmaps?watch=true", tt.headers)
			body, _ := io.ReadAll(resp.Body)
			var st api.Status
			if resp.StatusCode != http.StatusBadRequest || json.Unmarshal(body, &st) != nil || st.Kind != "Status" || st.Code != 400 {
				t.Errorf("answered %s %s, want a 400 Status", resp.Status, body)
			}
		})
	}
	if n := detachedWatches(s); n != 0 {
		t.Errorf("%d watches started", n)
	}
}

// TestWebSocketIdleWatchesGoroutines checks that an idle WebSocket watch
// costs one goroutine, its reader: the senders serve it, no handler, ping
// loop or library reader stays behind.
func TestWebSocketIdleWatchesGoroutines(t *testing.T) {
	ts, s, _ := newWatchServer(t)
	start, _ := storageCurrent(t, ts)
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	settle := func(want int) int {
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= want || time.Now().After(deadline) {
				return n
			}
			time.Sleep(5 * time.Millisecond) // net/http's connection goroutines end after the handlers; bounded
		}
	}
	dialWS(t, ts, path) // starts the senders
	waitDetached(t, s, 1)
	before := runtime.NumGoroutine()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); { // until the first watch's handler and connection goroutines have ended
		time.Sleep(20 * time.Millisecond)
		n := runtime.NumGoroutine()
		if n == before {
			break
		}
		before = n
	}
	var m0, m1 runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m0)
	const n = 100
	for range n {
		dialWS(t, ts, path)
	}
	waitDetached(t, s, n+1)
	after := settle(before + n)
	runtime.GC()
	runtime.ReadMemStats(&m1)
	t.Logf("%d idle WebSocket watches: %d goroutines more, %.0f bytes of heap and %.0f of stacks each (the client's side included)",
		n, after-before, float64(int64(m1.HeapInuse)-int64(m0.HeapInuse))/n, float64(int64(m1.StackInuse)-int64(m0.StackInuse))/n)
	if after-before > n {
		t.Errorf("%d idle WebSocket watches added %d goroutines, want at most one each (its reader)", n, after-before)
	}
}

// FuzzWebSocketReader feeds the client frame parser arbitrary bytes (it
// must only fail with a close status or the connection's end, and hand
// back no control payload beyond 125 bytes), and a well-formed frame made
// from the inputs, which it must read back.
func FuzzWebSocketReader(f *testing.F) {
	f.Add([]byte{0x89, 0x80, 1, 2, 3, 4}, byte(wsPing), []byte("hi"), uint32(0x01020304), true)
	f.Add(clientFrame(wsText, []byte("ab"), testMask, true), byte(wsClose), []byte{3, 232}, uint32(0), true)
	f.Add(clientFrame(0x80|wsBinary, make([]byte, 300), testMask, true), byte(wsBinary), make([]byte, 70000), uint32(7), false)
	f.Add([]byte{0x81, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0}, byte(wsContinuation), []byte{}, uint32(9), true)
	f.Fuzz(func(t *testing.T, data []byte, op byte, payload []byte, mask uint32, fin bool) {
		r := &wsReader{r: bytes.NewReader(data)}
		for {
			op, p, err := r.next()
			var st wsStatus
			switch {
			case errors.As(err, &st):
				if st != wsProtocolError && st != wsTooBig && st != wsInvalidData {
					t.Fatalf("closes with %d", st)
				}
			case err != nil:
				if err != io.EOF && err != io.ErrUnexpectedEOF {
					t.Fatalf("error %v", err)
				}
			case op >= wsClose && len(p) > wsMaxControl, op < wsClose && p != nil:
				t.Fatalf("opcode %x with a payload of %d bytes", op, len(p))
			default:
				continue
			}
			break
		}

		op &= 0x0f
		control := op >= wsClose
		if control {
			fin = true
			payload = payload[:min(len(payload), wsMaxControl)]
		}
		if op == wsText {
			fin = true // a whole message: split ones are FuzzUTF8Stream's
		}
		valid := op == wsContinuation || op == wsBinary || op == wsPing || op == wsPong || (op == wsClose && len(payload) == 0) ||
			op == wsText && utf8.Valid(payload)
		if op == wsClose && len(payload) >= 2 { // a code an endpoint may send, a UTF-8 reason
			code := binary.BigEndian.Uint16(payload)
			valid = (code >= 1000 && code <= 1003 || code >= 1007 && code <= 1014 || code >= 3000 && code <= 4999) && utf8.Valid(payload[2:])
		}
		b0 := op
		if fin {
			b0 |= 0x80
		}
		var m [4]byte
		binary.BigEndian.PutUint32(m[:], mask)
		r = &wsReader{r: bytes.NewReader(clientFrame(b0, payload, m, true)), fragmented: op == wsContinuation}
		got, p, err := r.next()
		switch {
		case !valid || len(payload) > wsMaxMessage:
			if err == nil {
				t.Fatalf("frame %x of %d bytes read without error", b0, len(payload))
			}
		case err != nil || got != op:
			t.Fatalf("frame %x of %d bytes: opcode %x, %v", b0, len(payload), got, err)
		case control && !bytes.Equal(p, payload):
			t.Fatalf("control frame %x: payload %q, want %q", b0, p, payload)
		}
	})
}

// FuzzUTF8Stream checks that bytes given to a utf8Stream in pieces, cut
// where cuts says, are found UTF-8 exactly when utf8.Valid finds them so.
func FuzzUTF8Stream(f *testing.F) {
	f.Add([]byte("héllo wörld € 𝄞"), []byte{1, 2, 3})
	f.Add([]byte("\xed\xa0\x80"), []byte{1})         // a surrogate
	f.Add([]byte("\xc0\xaf"), []byte{1})             // an overlong slash
	f.Add([]byte("abc\xe2\x82"), []byte{4})          // ends inside a character
	f.Add([]byte("\xef\xbf\xbd\xf4\x90"), []byte{2}) // U+FFFD, then past U+10FFFF
	f.Fuzz(func(t *testing.T, data, cuts []byte) {
		var u utf8Stream
		ok, rest := true, data
		for _, c := range cuts {
			n := min(int(c)%8, len(rest))
			ok = ok && u.write(rest[:n])
			rest = rest[n:]
		}
		ok = ok && u.write(rest)
		ok = ok && u.end()
		if want := utf8.Valid(data); ok != want {
			t.Fatalf("%q cut by %v: UTF-8 %v, want %v", data, cuts, ok, want)
		}
	})
}

// TestUTF8StreamEveryCut checks strings of every kind of character cut
// into two pieces at every place, and into bytes.
func TestUTF8StreamEveryCut(t *testing.T) {
	for _, s := range []string{"héllo wörld € 𝄞", "\xed\xa0\x80", "\xc0\xaf", "abc\xe2\x82", "é\xff", "\xf4\x90\x80\x80", "𝄞𝄞"} {
		want := utf8.Valid([]byte(s))
		for i := range len(s) + 1 {
			var u utf8Stream
			if got := u.write([]byte(s[:i])) && u.write([]byte(s[i:])) && u.end(); got != want {
				t.Errorf("%q cut at %d: UTF-8 %v, want %v", s, i, got, want)
			}
		}
		var u utf8Stream
		got := true
		for i := range len(s) {
			got = got && u.write([]byte{s[i]})
		}
		if got = got && u.end(); got != want {
			t.Errorf("%q a byte at a time: UTF-8 %v, want %v", s, got, want)
		}
	}
}
