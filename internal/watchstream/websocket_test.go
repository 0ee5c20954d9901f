package watchstream

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
)

// TestWebSocketPingEventClose checks a detached WebSocket watch's wire:
// a client's ping answered by a pong with its payload, an event as one
// text message without the newline, a ping due (as the watch's timer
// marks it every wsPingInterval) sent as a ping frame, the client's pong
// needing nothing, and the client's close answered by the close frame
// that ends the watch; in cleartext, over TLS on a Listener (socketConn)
// and over TLS without one.
func TestWebSocketPingEventClose(t *testing.T) {
	x := newTestServer(t, Config{})
	from := x.cache.Revision()
	for _, transport := range []string{"cleartext", "TLS", "TLS without socketConn"} {
		t.Run(transport, func(t *testing.T) {
			c := streamtest.DialWS(t, dial(t, x.serve(transport)), fmt.Sprintf("/?resourceVersion=%d", from))
			x.only()
			c.Write(streamtest.WSFrame(0x80|wsPing, []byte("are you there"), streamtest.Mask, true))
			if op, p := c.Read(); op != wsPong || string(p) != "are you there" {
				t.Fatalf("got frame %x %q, want the pong", op, p)
			}
			from = x.put("ws-" + strings.ReplaceAll(strings.ToLower(transport), " ", "-"))
			op, p := c.Read()
			var ev api.WatchEvent
			if op != wsText || bytes.HasSuffix(p, []byte("\n")) || json.Unmarshal(p, &ev) != nil || ev.Type != api.Added {
				t.Fatalf("got frame %x %q, want the ADDED event as a text message without a newline", op, p)
			}
			d := x.only()
			d.mu.Lock()
			d.pingTick() // what d.pinger does every wsPingInterval
			d.wakeLocked()
			d.mu.Unlock()
			if op, p := c.Read(); op != wsPing || len(p) != 0 {
				t.Fatalf("got frame %x %q, want a ping", op, p)
			}
			c.Write(streamtest.WSFrame(0x80|wsPong, nil, streamtest.Mask, true))
			c.Write(streamtest.WSFrame(0x80|wsClose, binary.BigEndian.AppendUint16(nil, 1000), streamtest.Mask, true))
			c.ExpectClose(1000, "watch ended")
			testwait.Until(t, 10*time.Second, "the watch's end", func() bool { return x.e.Watches() == 0 })
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

// FuzzWebSocketReader feeds the client frame parser arbitrary bytes (it
// must only fail with a close status or the connection's end, and hand
// back no control payload beyond 125 bytes), and a well-formed frame made
// from the inputs, which it must read back.
func FuzzWebSocketReader(f *testing.F) {
	f.Add([]byte{0x89, 0x80, 1, 2, 3, 4}, byte(wsPing), []byte("hi"), uint32(0x01020304), true)
	f.Add(streamtest.WSFrame(wsText, []byte("ab"), streamtest.Mask, true), byte(wsClose), []byte{3, 232}, uint32(0), true)
	f.Add(streamtest.WSFrame(0x80|wsBinary, make([]byte, 300), streamtest.Mask, true), byte(wsBinary), make([]byte, 70000), uint32(7), false)
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
		r = &wsReader{r: bytes.NewReader(streamtest.WSFrame(b0, payload, m, true)), fragmented: op == wsContinuation}
		got, p, err := r.next()
		switch {
		case !valid || len(payload) > MaxWebSocketMessage:
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
