package watchstream

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// A watch over WebSocket (RFC 6455) is detached like an HTTP/1.1 one
// (detached.go): the handshake is answered on the hijacked connection,
// the senders write its events through the same connSink, framed as
// kube-apiserver frames them (one event per message, without the trailing
// newline; text for JSON, binary for protobuf), and a reader per watch
// (readWebSocket) parses what the client sends: it answers pings (the pong
// written by whoever serves the watch), and ends the watch at the client's
// close, a protocol error or the connection's end. A ping goes to the
// client every wsPingInterval, so that proxies keep an idle watch open.

// wsPingInterval keeps idle WebSocket watches alive through proxies.
const wsPingInterval = 30 * time.Second

// The opcodes (RFC 6455 section 5.2).
const (
	wsContinuation = 0x0
	wsText         = 0x1
	wsBinary       = 0x2
	wsClose        = 0x8
	wsPing         = 0x9
	wsPong         = 0xA
)

const (
	// wsMaxControl is a control frame's longest payload (RFC 6455 5.5).
	wsMaxControl = 125
	// wsMaxHead is a frame header's longest: 2 bytes, a 64-bit length and
	// a mask.
	wsMaxHead = 14
	// MaxWebSocketMessage bounds a data message a client sends on a watch: it
	// has nothing to say, so what it sends is read and discarded, and a
	// larger message closes the connection (1009) rather than keep a
	// reader busy discarding it.
	MaxWebSocketMessage = 64 << 10
)

// wsStatus is a close frame's status code; the reader returns the codes
// it closes with as errors.
type wsStatus uint16

const (
	wsNormal        wsStatus = 1000
	wsGoingAway     wsStatus = 1001 // the server is shutting down
	wsProtocolError wsStatus = 1002
	wsInvalidData   wsStatus = 1007 // a text message that is not UTF-8
	wsTooBig        wsStatus = 1009
)

// Error is the status's reason, as its close frame says it.
func (s wsStatus) Error() string {
	switch s {
	case wsProtocolError:
		return "protocol error"
	case wsTooBig:
		return "message too big"
	case wsInvalidData:
		return "invalid UTF-8"
	case wsGoingAway:
		return "server shutting down"
	}
	return "watch ended"
}

// wsFraming is a connSink's WebSocket state: it frames each event as one
// message.
type wsFraming struct {
	heads []byte // the frame headers of a send; kept between sends while small
	// ctl holds the control frames due (a ping, a pong), sent ahead of
	// the next events; queued only when the sink is not stalled, so that
	// no unwritten send still refers to it.
	ctl []byte
	// status is the close frame's code (0: wsNormal), set by the reader
	// before it ends the watch, or by the watch's end at a shutdown.
	status atomic.Uint32
	// early is what the client sent after its handshake that net/http
	// had read already; the reader's.
	early []byte
}

// appendWSHeader appends the header of an unmasked, final frame of n
// bytes.
func appendWSHeader(b []byte, op byte, n int) []byte {
	b = append(b, 0x80|op)
	switch {
	case n <= wsMaxControl:
		return append(b, byte(n))
	case n <= 0xffff:
		return binary.BigEndian.AppendUint16(append(b, 126), uint16(n))
	}
	return binary.BigEndian.AppendUint64(append(b, 127), uint64(n))
}

// wsFrames sets s.vecs to the pieces of a send: the control frames due,
// then each event as one frame, its header and its bytes in place (the
// shared frame, or appendFrame's pieces), without the newline (JSON) or
// length prefix (protobuf) that frames it on a chunked stream.
func (s *connSink) wsFrames(e *encoder, items []watchcache.Item) {
	ws := s.ws
	op := byte(wsText)
	if e.protobuf {
		op = wsBinary
	}
	vecs := s.vecs[:0]
	if len(ws.ctl) > 0 {
		vecs = append(vecs, ws.ctl)
		ws.ctl = ws.ctl[:0]
	}
	heads := slices.Grow(ws.heads[:0], wsMaxHead*len(items)) // not grown below: the pieces stay valid
	shared, isShared := e.sharedFrame(items)
	for _, it := range items {
		at := len(vecs)
		vecs = append(vecs, nil) // the header, once the size is known
		if isShared {
			vecs = append(vecs, shared.frame())
		} else {
			vecs = e.AppendFrame(vecs, it)
		}
		last := &vecs[len(vecs)-1]
		if e.protobuf {
			*last = (*last)[4:]
		} else {
			*last = (*last)[:len(*last)-1]
		}
		n := 0
		for _, b := range vecs[at+1:] {
			n += len(b)
		}
		h := len(heads)
		heads = appendWSHeader(heads, op, n)
		vecs[at] = heads[h:]
		s.written += int64(n)
	}
	ws.heads = sockwrite.Reuse(heads)
	s.vecs = vecs
}

// queueControl queues a ping and a pong (with its ping's payload) to be
// sent ahead of the next events, or by sendControl.
func (s *connSink) queueControl(ping, pongDue bool, pong []byte) {
	if s.ws == nil {
		return // chunks carry no control frames
	}
	if ping {
		s.ws.ctl = appendWSHeader(s.ws.ctl, wsPing, 0)
	}
	if pongDue {
		s.ws.ctl = append(appendWSHeader(s.ws.ctl, wsPong, len(pong)), pong...)
	}
}

// sendControl writes the control frames no send carried.
func (s *connSink) sendControl() error {
	if s.ws == nil || len(s.ws.ctl) == 0 {
		return nil
	}
	s.vecs = append(s.vecs[:0], s.ws.ctl)
	s.ws.ctl = s.ws.ctl[:0]
	return s.write()
}

// goingAway: see streamSink.
func (s *connSink) goingAway() {
	if s.ws != nil {
		s.ws.status.CompareAndSwap(0, uint32(wsGoingAway))
	}
}

// closeFrame is the close frame that ends the stream.
func (ws *wsFraming) closeFrame() []byte {
	st := wsStatus(ws.status.Load())
	if st == 0 {
		st = wsNormal
	}
	reason := st.Error()
	b := appendWSHeader(make([]byte, 0, 4+2+len(reason)), wsClose, 2+len(reason))
	return append(binary.BigEndian.AppendUint16(b, uint16(st)), reason...)
}

// wsHeader is a client frame's header.
type wsHeader struct {
	fin    bool
	op     byte
	length uint64
	mask   [4]byte
}

// wsHeaderSize is the size of the header whose second byte is b1.
func wsHeaderSize(b1 byte) int {
	n := 2
	switch b1 & 0x7f {
	case 126:
		n += 2
	case 127:
		n += 8
	}
	if b1&0x80 != 0 {
		n += 4
	}
	return n
}

// parseWSHeader parses the wsHeaderSize(b[1]) bytes of a client frame's
// header, which must be masked, with no extension bits; a control frame
// must be final and at most wsMaxControl bytes.
func parseWSHeader(b []byte) (wsHeader, error) {
	h := wsHeader{fin: b[0]&0x80 != 0, op: b[0] & 0x0f}
	if b[0]&0x70 != 0 || b[1]&0x80 == 0 {
		return h, wsProtocolError // no extension was negotiated; a client masks every frame
	}
	i := 2
	switch h.length = uint64(b[1] & 0x7f); h.length {
	case 126:
		h.length, i = uint64(binary.BigEndian.Uint16(b[2:])), 4
	case 127:
		h.length, i = binary.BigEndian.Uint64(b[2:]), 10
		if h.length>>63 != 0 {
			return h, wsProtocolError
		}
	}
	copy(h.mask[:], b[i:])
	switch h.op {
	case wsContinuation, wsText, wsBinary:
	case wsClose, wsPing, wsPong:
		if !h.fin || h.length > wsMaxControl || (h.op == wsClose && h.length == 1) {
			return h, wsProtocolError
		}
	default:
		return h, wsProtocolError
	}
	return h, nil
}

// wsReader reads a client's frames: control frames whole, data frames
// discarded, a text message's once checked to be UTF-8.
type wsReader struct {
	r          io.Reader
	buf        [wsMaxHead + wsMaxControl]byte
	message    uint64     // the bytes so far of the data message being read
	fragmented bool       // a data message's first frame was read, not its last
	text       bool       // the data message being read is text
	utf8       utf8Stream // its bytes so far
}

// next reads the next frame: a control frame's opcode and payload
// (valid until the next call), or a data frame's opcode, its payload
// discarded. A protocol violation is a wsStatus error; the connection's
// end is io.EOF between frames, io.ErrUnexpectedEOF within one.
func (r *wsReader) next() (op byte, payload []byte, err error) {
	if _, err := io.ReadFull(r.r, r.buf[:2]); err != nil {
		return 0, nil, err
	}
	n := wsHeaderSize(r.buf[1])
	if _, err := io.ReadFull(r.r, r.buf[2:n]); err != nil {
		return 0, nil, noEOF(err)
	}
	h, err := parseWSHeader(r.buf[:n])
	if err != nil {
		return 0, nil, err
	}
	if h.op >= wsClose {
		p := r.buf[wsMaxHead : wsMaxHead+int(h.length)]
		if _, err := io.ReadFull(r.r, p); err != nil {
			return 0, nil, noEOF(err)
		}
		h.unmask(p, 0)
		if h.op == wsClose && !validClosePayload(p) {
			return 0, nil, wsProtocolError
		}
		return h.op, p, nil
	}
	if (h.op == wsContinuation) != r.fragmented {
		return 0, nil, wsProtocolError // a continuation of nothing, or a new message inside one
	}
	if h.length > MaxWebSocketMessage-r.message {
		return 0, nil, wsTooBig
	}
	r.message += h.length
	r.fragmented = !h.fin
	if h.fin {
		r.message = 0
	}
	if h.op != wsContinuation {
		r.text = h.op == wsText
	}
	if r.text {
		return h.op, nil, r.discardText(h)
	}
	if _, err := io.CopyN(io.Discard, r.r, int64(h.length)); err != nil {
		return 0, nil, noEOF(err)
	}
	return h.op, nil, nil
}

// unmask unmasks b, the payload's bytes from offset on (RFC 6455 5.3).
func (h *wsHeader) unmask(b []byte, offset uint64) {
	for i := range b {
		b[i] ^= h.mask[(offset+uint64(i))%4]
	}
}

// discardText reads and drops a text message's frame, failing with
// wsInvalidData as soon as the message is not UTF-8 (RFC 6455 8.1), a
// character split between its frames allowed.
func (r *wsReader) discardText(h wsHeader) error {
	var chunk [512]byte
	for read := uint64(0); read < h.length; {
		b := chunk[:min(uint64(len(chunk)), h.length-read)]
		if _, err := io.ReadFull(r.r, b); err != nil {
			return noEOF(err)
		}
		h.unmask(b, read)
		read += uint64(len(b))
		if !r.utf8.write(b) {
			return wsInvalidData
		}
	}
	if h.fin && !r.utf8.end() {
		return wsInvalidData // the message ends inside a character
	}
	return nil
}

// utf8Stream checks that bytes given in pieces are UTF-8, a character
// possibly split between pieces.
type utf8Stream struct {
	part [utf8.UTFMax]byte // the start of a character the last piece ended in
	n    int               // bytes in part
}

// write reports whether the bytes so far, b included, are UTF-8 or the
// start of it.
func (u *utf8Stream) write(b []byte) bool {
	for u.n > 0 && len(b) > 0 { // complete the character begun
		u.part[u.n] = b[0]
		u.n, b = u.n+1, b[1:]
		if utf8.FullRune(u.part[:u.n]) {
			if r, size := utf8.DecodeRune(u.part[:u.n]); r == utf8.RuneError && size == 1 {
				return false
			}
			u.n = 0
		}
	}
	cut := len(b) // b[cut:] is a character's start, kept for the next piece
	for i := len(b) - 1; i >= 0 && i > len(b)-utf8.UTFMax; i-- {
		if utf8.RuneStart(b[i]) {
			if !utf8.FullRune(b[i:]) {
				cut = i
			}
			break
		}
	}
	if !utf8.Valid(b[:cut]) {
		return false
	}
	u.n += copy(u.part[u.n:], b[cut:])
	return true
}

// end reports whether the bytes ended with a whole character, and starts
// over.
func (u *utf8Stream) end() bool {
	whole := u.n == 0
	u.n = 0
	return whole
}

// validClosePayload reports whether a close frame's payload is empty, or
// a status code an endpoint may send followed by a UTF-8 reason (RFC 6455
// 5.5.1, 7.4): 1005, 1006 and 1015 only stand for a close without one,
// codes below 1000 and from 1016 to 2999 are not assigned.
func validClosePayload(p []byte) bool {
	if len(p) == 0 {
		return true
	}
	if len(p) < 2 || !utf8.Valid(p[2:]) {
		return false
	}
	switch code := binary.BigEndian.Uint16(p); {
	case code < 1000, code == 1004, code == 1005, code == 1006, code >= 1015 && code < 3000, code >= 5000:
		return false
	}
	return true
}

// noEOF is err, but io.ErrUnexpectedEOF for io.EOF: the connection ended
// inside a frame.
func noEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

// readWebSocket reads a WebSocket watch's connection: it hands the
// client's pings to whoever serves the watch to answer, and ends the
// watch at the client's close or a protocol violation (then dropping what
// the client sends until it closes its side, or the stream's end has
// lingered: the close frame is not lost to a reset), or at the
// connection's end; the connection is then closed (readDone).
func (s *connSink) readWebSocket(d *detachedWatch) {
	defer s.readDone()
	r := &wsReader{r: s.conn}
	if len(s.ws.early) > 0 {
		r.r = io.MultiReader(bytes.NewReader(s.ws.early), s.conn)
		s.ws.early = nil
	}
	for {
		op, payload, err := r.next()
		var st wsStatus
		switch {
		case errors.As(err, &st):
			s.ws.status.Store(uint32(st))
			d.end(endClosed)
			discard(s.conn)
			return
		case err != nil:
			d.end(endGone)
			return
		case op == wsPing:
			d.pingReceived(payload)
		case op == wsPong:
			d.pongReceived()
		case op == wsClose:
			d.end(endClosed)
			discard(s.conn)
			return
		}
	}
}

// pingTick marks a ping due, under mu, unless the client has not
// answered the last one, a period ago, though its watch is not slow: then
// the client is gone (a peer that vanished without closing its connection
// would otherwise keep its watch until TCP gives up), and the watch ends,
// as it did when coder/websocket's Ping waited wsPingInterval for the
// pong. A slow watch (served by its own goroutine: its client does not
// read) is never ended for it: it may not even have had the ping.
func (d *detachedWatch) pingTick() {
	if d.unponged && d.state != dedicated {
		d.endLocked(endGone)
		return
	}
	d.ping, d.unponged = true, true
}

// pongReceived notes that the client answered a ping (any pong will do).
func (d *detachedWatch) pongReceived() {
	d.mu.Lock()
	d.unponged = false
	d.mu.Unlock()
}

// pingReceived marks a pong due, with the ping's payload (an answer to
// the latest ping is enough, RFC 6455 5.5.3), and wakes the watch.
func (d *detachedWatch) pingReceived(payload []byte) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.state == finished {
		return
	}
	d.pongDue, d.pong = true, append(d.pong[:0], payload...)
	d.wakeLocked()
}
