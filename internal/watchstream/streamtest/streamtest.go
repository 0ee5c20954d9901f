// Package streamtest holds the bare clients of tests of watch streams,
// which read the wire as it is rather than a client library's reading of
// it: a chunked HTTP/1.1 watch read chunk by chunk (Chunks), and a
// WebSocket client that starts no goroutine, writes the frames it is
// given (masked or not, well formed or not) and reads the server's
// (WSClient).
package streamtest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// The opcodes (RFC 6455 section 5.2).
const (
	OpContinuation = 0x0
	OpText         = 0x1
	OpBinary       = 0x2
	OpClose        = 0x8
	OpPing         = 0x9
	OpPong         = 0xA
)

// WSKey and WSAccept are RFC 6455's example handshake (section 1.3).
const (
	WSKey    = "dGhlIHNhbXBsZSBub25jZQ=="
	WSAccept = "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="
)

// Mask is the mask of the frames tests send.
var Mask = [4]byte{0x37, 0xfa, 0x21, 0x3d}

// Upgrade sends a WebSocket handshake for path with headers (a value ""
// leaves the header out) and returns the server's answer.
func Upgrade(t testing.TB, conn net.Conn, path string, headers map[string]string) (*http.Response, *bufio.Reader) {
	t.Helper()
	h := map[string]string{"Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13", "Sec-WebSocket-Key": WSKey}
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

// WSClient is one WebSocket connection, past its handshake.
type WSClient struct {
	T    testing.TB
	Conn net.Conn
	BR   *bufio.Reader // reads Conn
}

// DialWS upgrades conn to a WebSocket watch of path, wanting the server to
// accept (WSKey's WSAccept: the server's answer to RFC 6455's example).
func DialWS(t testing.TB, conn net.Conn, path string) *WSClient {
	t.Helper()
	resp, br := Upgrade(t, conn, path, nil)
	if resp.StatusCode != http.StatusSwitchingProtocols || resp.Header.Get("Sec-WebSocket-Accept") != WSAccept {
		t.Fatalf("handshake answered %s, Sec-WebSocket-Accept %q", resp.Status, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	return &WSClient{T: t, Conn: conn, BR: br}
}

// WSFrame is a frame whose first byte is b0 (FIN, RSV, opcode), masked
// with mask if masked.
func WSFrame(b0 byte, payload []byte, mask [4]byte, masked bool) []byte {
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

// Write writes b.
func (c *WSClient) Write(b []byte) {
	c.T.Helper()
	_ = c.Conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Conn.Write(b); err != nil {
		c.T.Fatal(err)
	}
}

// Read reads one of the server's frames, which must be final and
// unmasked.
func (c *WSClient) Read() (op byte, payload []byte) {
	c.T.Helper()
	_ = c.Conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	h := make([]byte, 2, 10)
	if _, err := io.ReadFull(c.BR, h); err != nil {
		c.T.Fatalf("reading a frame: %v", err)
	}
	if h[0]&0xf0 != 0x80 || h[1]&0x80 != 0 {
		c.T.Fatalf("frame header %x: want FIN, no RSV bits, unmasked", h)
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		h = h[:4]
		_, _ = io.ReadFull(c.BR, h[2:])
		n = uint64(binary.BigEndian.Uint16(h[2:]))
	case 127:
		h = h[:10]
		_, _ = io.ReadFull(c.BR, h[2:])
		n = binary.BigEndian.Uint64(h[2:])
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(c.BR, payload); err != nil {
		c.T.Fatalf("reading a frame's payload: %v", err)
	}
	return h[0] & 0x0f, payload
}

// ExpectClose reads the server's close frame, wants status code and
// reason, and then the connection's end.
func (c *WSClient) ExpectClose(code uint16, reason string) {
	c.T.Helper()
	op, p := c.Read()
	if op != OpClose || len(p) < 2 || binary.BigEndian.Uint16(p) != code || string(p[2:]) != reason {
		c.T.Fatalf("got frame %x %q, want a close %d %q", op, p, code, reason)
	}
	if _, err := c.BR.ReadByte(); err != io.EOF {
		c.T.Fatalf("after the close frame: %v, want the connection's end", err)
	}
}

// Chunks is an HTTP/1.1 watch read from a raw socket, chunk by chunk, so
// that the framing itself is checked rather than a client's reading of it.
type Chunks struct {
	T    testing.TB
	Conn net.Conn
	R    *bufio.Reader // reads Conn past the head
	Head *http.Response
}

// OpenWatch asks for the watch of path on conn and reads the response
// head.
func OpenWatch(t testing.TB, conn net.Conn, path string) *Chunks {
	t.Helper()
	_ = conn.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path)
	r := bufio.NewReader(conn)
	// Only the head goes to ReadResponse: the body is read raw.
	head, err := http.ReadResponse(bufio.NewReader(headOnly(t, r)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return &Chunks{T: t, Conn: conn, R: r, Head: head}
}

// headOnly reads a response head (through the blank line) from r.
func headOnly(t testing.TB, r *bufio.Reader) io.Reader {
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

// Chunk reads one chunk; size 0 is the terminating chunk (with its CRLF).
func (c *Chunks) Chunk() []byte {
	c.T.Helper()
	line, err := c.R.ReadString('\n')
	if err != nil {
		c.T.Fatalf("reading a chunk size: %v", err)
	}
	n, err := strconv.ParseInt(strings.TrimSuffix(line, "\r\n"), 16, 64)
	if err != nil || !strings.HasSuffix(line, "\r\n") {
		c.T.Fatalf("chunk size line %q", line)
	}
	body := make([]byte, n+2)
	if _, err := io.ReadFull(c.R, body); err != nil {
		c.T.Fatalf("reading a chunk of %d bytes: %v", n, err)
	}
	if !bytes.HasSuffix(body, []byte("\r\n")) {
		c.T.Fatalf("chunk of %d bytes does not end in CRLF: %q", n, body)
	}
	return body[:n]
}

// Events decodes a chunk's JSON lines; a chunk holds whole events.
func (c *Chunks) Events(chunk []byte) []api.WatchEvent {
	c.T.Helper()
	if !bytes.HasSuffix(chunk, []byte("\n")) {
		c.T.Fatalf("chunk does not end with a whole event: %q", chunk)
	}
	var out []api.WatchEvent
	for line := range bytes.Lines(chunk) {
		var ev api.WatchEvent
		if err := json.Unmarshal(line, &ev); err != nil {
			c.T.Fatalf("event %q: %v", line, err)
		}
		out = append(out, ev)
	}
	return out
}

// Ends checks that the next chunk is the terminating one and that the
// server then closes the connection.
func (c *Chunks) Ends() {
	c.T.Helper()
	for {
		ch := c.Chunk()
		if len(ch) == 0 {
			break
		}
		for _, ev := range c.Events(ch) {
			if ev.Type != api.Bookmark {
				c.T.Fatalf("%s event before the end, want only bookmarks", ev.Type)
			}
		}
	}
	if b, err := c.R.ReadByte(); err != io.EOF {
		c.T.Fatalf("after the terminating chunk: byte %q, err %v; want EOF", b, err)
	}
}

// CountEvents reads a JSON watch's stream (raw, or a response body),
// sending on read for each event, until the read fails: the clients of
// fan-out benchmarks, which count deliveries without decoding them.
func CountEvents(stream io.Reader, read chan<- struct{}) {
	r := bufio.NewReaderSize(stream, 64<<10)
	prefix := []byte(`{"type":"`)
	for {
		line, err := r.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			continue // the rest of a long line
		}
		if err != nil {
			return
		}
		if bytes.HasPrefix(line, prefix) {
			read <- struct{}{}
		}
	}
}
