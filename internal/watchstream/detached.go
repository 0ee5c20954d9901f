package watchstream

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/lockrank"
	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// A watch over HTTP/1.1 is detached: its connection is hijacked,
// its handler returns, and a small pool of senders (pool.go) writes to it
// whenever its watcher has something pending. That does what net/http
// cannot:
//   - each send is one writev of the chunk header, the shared event bytes
//     and the chunk trailer (net/http copies a send twice and splits it at
//     its 4 KiB connection buffer into several writes);
//   - an idle watch holds no buffer and one goroutine, the read that
//     notices its client going away (net/http keeps 10 KiB of buffers and
//     a deep goroutine per request, and the handler one more);
//   - an event makes a few senders runnable, not one goroutine per
//     watcher, so that the write path is not queued behind a thousand of
//     them; a sender takes everything pending for a watcher, so events
//     that arrive faster than they can be written are coalesced.
//
// A sender never waits on a socket: it writes with one non-blocking writev
// (internal/sockwrite). A watch whose write would block (its client reads
// slowly) or that is catching up (from the ring or the store) gets a
// goroutine of its own until it is level and writable again, so that it
// never holds up a sender. Over TLS, a send is one tls.Conn.Write of its
// pieces copied into one buffer (of the shared event frame alone, when it
// is the send: frame.go), on a connection from Listener whose
// socket takes it without blocking (tls.go). An HTTP/2 stream
// served by internal/h2 is detached in the same way, its events written as
// DATA frames (h2.go), and so is a WebSocket, its events written as
// messages (websocket.go).

// EndWriteGrace bounds the writes at the end of a stream (the last
// bookmark, the terminating chunk), so that a client that stopped reading
// cannot hold up a timeout or a shutdown.
const EndWriteGrace = 2 * time.Second

// canDetach reports whether a watch can be streamed on its hijacked
// connection: HTTP/1.1 on a connection net/http lets go, chunked in
// cleartext or over TLS on a connection from Listener, or a WebSocket
// (over any TLS connection: without a socketConn under it, the watch's
// own goroutine writes every send); or on an HTTP/2 stream served by
// internal/h2.
func canDetach(w http.ResponseWriter, r *http.Request, webSocket bool) bool {
	if r.ProtoMajor == 2 {
		_, ok := h2Detacher(w)
		return ok
	}
	if r.ProtoMajor != 1 || !CanHijack(w) {
		return false
	}
	if webSocket {
		return true // its handshake was found valid: HTTP/1.1
	}
	return r.ProtoMinor == 1 && (r.TLS == nil || overSocketConn(r.Context()))
}

// CanHijack reports whether w, or a writer it wraps, is an http.Hijacker,
// as http.ResponseController looks for one.
func CanHijack(w http.ResponseWriter) bool {
	_, ok := unwrapWriter[http.Hijacker](w)
	return ok
}

// endReason is why a detached watch ends.
type endReason uint8

const (
	notEnding   endReason = iota
	endTimeout            // timeoutSeconds: a last bookmark if asked, then the terminating chunk
	endShutdown           // Engine.Close: the terminating chunk
	endGone               // the client closed the connection, or a write failed
	endError              // the stream's last event was sent (an ERROR), or it cannot go on
	endClosed             // a WebSocket client closed, or broke the protocol: a close frame answers
)

// sendState is who serves a detached watch.
type sendState uint8

const (
	starting  sendState = iota // not yet started: wakes are remembered
	idle                       // nothing pending: the next wake queues it on the pool
	queued                     // on the pool's queue
	running                    // a sender is serving it
	laned                      // in its watcher's lane: the senders write its batches (laneWriter)
	dedicated                  // its own goroutine serves it (slow client, or catching up)
	finished                   // over: wakes are ignored
)

// detachedWatch is one watch streamed on a hijacked connection. What a
// send reads comes first, in as few cache lines as it takes, each line
// with a field that Prefetch may read, when the struct starts on a line:
// in its size class (416 bytes) every other one starts half a line in,
// and then the line of mu is not prefetched.
type detachedWatch struct {
	started   atomic.Bool // e to bookmarks are set, never to change: Prefetch may read them
	e         *Engine
	w         *watchcache.Watcher
	enc       *encoder
	sink      streamSink
	counted   countingSink // sink, counting events in the watch metrics
	bookmarks bool
	laneSink  watchcache.LaneSink // what its lane writes, if it may enter one (nil: never)

	items []watchcache.Item // used only by whoever serves the watch

	mu lockrank.Mutex[lockrank.DetachedWatchMu] // the order: internal/lockrank
	// guarded by mu:
	state    sendState
	again    bool // woken while being served: serve it again
	ending   endReason
	bookmark bool          // a periodic bookmark is due
	ping     bool          // a WebSocket ping is due
	unponged bool          // the last WebSocket ping has had no pong yet
	pongDue  bool          // a WebSocket pong is due, carrying pong
	pong     []byte        // the payload of the client's latest ping
	wakec    chan struct{} // wakes its own goroutine, once dedicated

	// set as the watch starts, read as it ends:
	logEnd  func(written int64) // Config.Detach's
	timeout *time.Timer
	ticker  *time.Timer // bookmarks, if asked for
	pinger  *time.Timer // a WebSocket's pings
}

// Wake is the watcher's (watchcache.Waker): it runs under the cache's
// locks, or on a sender serving the watch's lane.
func (d *detachedWatch) Wake() {
	d.mu.Lock()
	d.wakeLocked()
	d.mu.Unlock()
}

func (d *detachedWatch) wakeLocked() {
	switch d.state {
	case idle:
		d.state = queued
		d.e.pool.push(d)
	case laned: // woken for something other than the cache's events
		if d.w.LeaveLane() {
			d.state = queued
			d.e.pool.push(d)
		} // else a sender holds its slot, and hands it over (handedBackLocked)
	case starting, running:
		d.again = true
	case dedicated:
		d.again = true
		select {
		case d.wakec <- struct{}{}:
		default:
		}
	}
}

// handedBackLocked takes d back from its lane (laneConn.HandOff): it is
// served as any other watch. Its slot left the lane before: a wake since
// may have served it, and even put it in its lane again, so a watch still
// laned is woken as any other (leaving the lane if in it), and a running
// one (entering the lane: afterServe) served again.
func (d *detachedWatch) handedBackLocked() {
	switch d.state {
	case laned:
		d.wakeLocked()
	case running:
		d.again = true
	}
}

// serveQueued serves d, taken from the pool's queue, on a sender.
func (d *detachedWatch) serveQueued() {
	d.mu.Lock()
	d.state, d.again = running, false
	d.mu.Unlock()
	d.afterServe(d.serve(true))
}

// WakeNow wakes d, on a sender (WakePolled), serving it at once if idle.
func (d *detachedWatch) WakeNow() {
	d.mu.Lock()
	if d.state != idle {
		d.wakeLocked()
		d.mu.Unlock()
		return
	}
	d.state = running
	d.mu.Unlock()
	d.afterServe(d.serve(true))
}

// endingNow is why the watch is ending, if it is.
func (d *detachedWatch) endingNow() endReason {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ending
}

// Prefetch reads, from each cache line of what serving the watch reads
// first (its own, its sink's, its encoder's and its watcher's), a field
// set before the watch started, and returns a value of no use but to keep
// the reads. After sends to a thousand other watches a watch's memory is
// cold: a sender that reads a share of watches ahead of serving them has
// their cache misses overlap, instead of each send stalling on its own.
func (d *detachedWatch) Prefetch() int64 {
	if !d.started.Load() {
		return 0
	}
	n := d.w.Prefetch()
	// Each read its own test: || would skip the encoder's line whenever
	// the client asked for bookmarks (as client-go's reflectors do).
	if d.bookmarks { // the line of counted too
		n++
	}
	if d.enc.protobuf {
		n++
	}
	return n + d.sink.prefetch()
}

// end makes the watch end, for reason, when next served, and bounds its
// writes (EndWriteGrace): a write its own goroutine is blocked in, for a
// client that does not read, gives up then instead of holding the end.
func (d *detachedWatch) end(reason endReason) {
	d.mu.Lock()
	d.endLocked(reason)
	d.mu.Unlock()
	if d.started.Load() { // else no sink yet: an HTTP/2 stream reset while detaching
		d.sink.boundWrites()
	}
}

// endLocked is end, under mu.
func (d *detachedWatch) endLocked(reason endReason) {
	if d.ending == notEnding {
		d.ending = reason
	}
	d.wakeLocked()
}

// tickEvery runs tick under mu, then wakes the watch, each period until the
// watch has finished; stop the timer it returns.
func (d *detachedWatch) tickEvery(period time.Duration, tick func()) *time.Timer {
	d.mu.Lock()
	defer d.mu.Unlock()
	var t *time.Timer
	t = time.AfterFunc(period, func() {
		d.mu.Lock()
		defer d.mu.Unlock()
		if d.state == finished {
			return
		}
		tick()
		d.wakeLocked()
		t.Reset(period)
	})
	return t
}

// detach hijacks the connection (or detaches the HTTP/2 stream) and starts
// streaming watch w on it, whose options carried s.d as their Waker; the
// handler may then return.
func (s *Stream) detach(w *watchcache.Watcher, deadline time.Time, enc *encoder) {
	d, e := s.d, s.e
	sink, err := s.openDetached()
	if err != nil {
		w.Stop()
		e.cfg.Log.Debug("watch connection lost at its start", "err", err)
		return
	}
	d.w, d.enc, d.sink, d.bookmarks = w, enc, sink, s.opts.Bookmarks
	if s.lane {
		d.laneSink = sink.laneSink(d)
	}
	d.counted = countingSink{watchSink: sink, m: s.opts.Metrics}
	d.started.Store(true)
	d.logEnd = e.cfg.Detach(s.r)
	if !e.start(d) { // the engine is closing: no reader started
		sink.noReader()
		d.finish(endShutdown)
		return
	}
	d.timeout = time.AfterFunc(time.Until(deadline), func() { d.end(endTimeout) })
	if s.opts.Bookmarks {
		d.ticker = d.tickEvery(e.cfg.BookmarkInterval, func() { d.bookmark = true })
	}
	if s.opts.WebSocket != nil {
		d.pinger = d.tickEvery(wsPingInterval, d.pingTick)
	}
	d.mu.Lock()
	d.state = idle
	if d.again { // woken at registration (initial events, catch-up)
		d.again = false
		d.wakeLocked()
	}
	d.mu.Unlock()
}

// laneSink is what the lane of d, a laneable watch, writes: its hijacked
// connection, chunked, in cleartext (nil if it has no descriptor) or over
// TLS on a socketConn.
func (s *connSink) laneSink(d *detachedWatch) watchcache.LaneSink {
	if s.ws == nil && (s.raw != nil || s.sock != nil) {
		return &laneConn{fd: noLaneFD, sink: s, d: d}
	}
	return nil
}

// laneConn is a watch's end of its lane (watchcache.LaneSink). In
// cleartext it writes through a descriptor of its socket of the lane's
// own (sockwrite.Writer.Dup), made at its first send and closed once the
// lane lets the watch go (Release), so that a lane's write reaches this
// socket, whenever the connection closes. A send reads this small struct
// and makes the system call; a write through the connection
// (sockwrite.Writer) also reads the sink, the net package's descriptor
// lock and its poller state, a cache miss each for each of a thousand
// watches written in turn: 0.4 µs more per delivery, of ~9, at 1,000
// watches x 50 writes/s. Over TLS it writes the frames as the watch's
// sends do (connSink.writeTLS): the socketConn, which has a descriptor of
// its own, keeps what the socket did not take.
type laneConn struct {
	fd   int            // noLaneFD until the first send; laneReleased after Release
	sink *connSink      // keeps what a send did not write
	d    *detachedWatch // taken back when the slot leaves the lane
}

const (
	noLaneFD     = -1
	laneReleased = -2
)

// SendNow writes a lane's frames without waiting: what the socket does not
// take stays in the sink's rest (over TLS, in its socketConn), the sink
// stalled, for the watch's own goroutine to flush once its slot has left
// the lane. Without a descriptor of its own (none could be made) it
// writes nothing: the watch's goroutine writes through the connection.
// Once released, it writes nothing either.
func (l *laneConn) SendNow(frames [][]byte) (bool, error) {
	if l.fd == laneReleased {
		return false, net.ErrClosed
	}
	if l.sink.sock != nil {
		err := l.sink.writeTLS(frames, true)
		if errors.Is(err, errWouldBlock) {
			return false, nil
		}
		return err == nil, err
	}
	if l.fd < 0 {
		fd, err := l.sink.raw.Dup()
		if err != nil {
			l.keep(frames, 0)
			return false, nil
		}
		l.fd = fd
	}
	n, err := sockwrite.Writev(uintptr(l.fd), frames)
	if err != nil && !errors.Is(err, errWouldBlock) {
		return false, err
	}
	size := 0
	for _, f := range frames {
		size += len(f)
	}
	if n == size {
		return true, nil
	}
	l.keep(frames, n)
	return false, nil
}

// keep puts frames after their first n bytes in the sink: its next write
// starts with them.
func (l *laneConn) keep(frames [][]byte, n int) {
	rest := net.Buffers(slices.Clone(frames)) // frames are the lane block's
	sockwrite.Consume(&rest, n)
	l.sink.rest = rest
}

// Release closes the lane's descriptor: no send follows.
func (l *laneConn) Release() {
	if l.fd >= 0 {
		_ = sockwrite.Close(l.fd)
	}
	l.fd = laneReleased
}

// HandOff takes back a watch that left its lane: a failed one ends, any
// other is served as other watches are.
func (l *laneConn) HandOff(failed bool) {
	if failed {
		l.d.end(endGone)
		return
	}
	l.d.mu.Lock()
	l.d.handedBackLocked()
	l.d.mu.Unlock()
}

// reader is a WebSocket's (readWebSocket), or watchGone.
func (s *connSink) reader(d *detachedWatch) func() {
	if s.ws != nil {
		return func() { s.readWebSocket(d) }
	}
	return func() { s.watchGone(d) }
}

// noReader: see streamSink.
func (s *connSink) noReader() { s.readDone() }

// watchGone reads an HTTP/1.1 watch's connection, discarding anything
// sent, as net/http's background read does while a handler runs: until
// the client closes it, which ends the watch, or, the stream ended, the
// linger passes; the connection is then closed (readDone).
func (s *connSink) watchGone(d *detachedWatch) {
	defer s.readDone()
	discard(s.conn)
	d.end(endGone)
}

// discard reads conn until it fails.
func discard(conn net.Conn) {
	buf := make([]byte, 64)
	for {
		if _, err := conn.Read(buf); err != nil {
			return
		}
	}
}

// outcome is what serving a watch once asks for next.
type outcome uint8

const (
	stepDone      outcome = iota // served: idle until woken
	stepDedicated                // needs its own goroutine: its write blocked, or it is catching up
	stepOver                     // the watch has ended
)

// serve takes everything pending and sends it in one write: without
// waiting on the socket for a sender (nonblocking), waiting for a watch's
// own goroutine.
func (d *detachedWatch) serve(nonblocking bool) outcome {
	stalled := d.sink.stalled() // over TLS, a lock of the socket's
	if nonblocking && (stalled || d.w.CatchingUp()) {
		return stepDedicated // a catch-up may read the store, a flush wait: not on a sender
	}
	d.sink.setNonblocking(nonblocking)
	if stalled { // on the watch's own goroutine
		if reason := d.endingNow(); reason != notEnding {
			d.finish(reason) // its writes bounded, unlike this flush
			return stepOver
		}
		if err := d.sink.flush(); err != nil {
			d.finish(endGone)
			return stepOver
		}
	}
	d.mu.Lock()
	ending, bookmark, control := d.ending, d.bookmark, d.ping || d.pongDue
	if ending == notEnding {
		if control { // sent ahead of the events, or alone below
			d.sink.queueControl(d.ping, d.pongDue, d.pong)
		}
		d.bookmark, d.ping, d.pongDue = false, false, false
	}
	d.mu.Unlock()
	if ending != notEnding {
		d.finish(ending)
		return stepOver
	}
	items, err := d.w.Pending(d.e.ctx, d.items[:0])
	switch {
	case len(items) > 0:
		err = d.counted.send(d.enc, items)
	case err != nil:
		if d.e.ctx.Err() != nil { // Close cancelled a catch-up before it reached this watch
			d.finish(endShutdown)
			return stepOver
		}
		endStream(d.e.ctx, err, d.enc, d.counted)
		d.finish(endError)
		return stepOver
	case bookmark:
		if rev, ok := d.w.Bookmark(); ok {
			err = d.counted.send(d.enc, []watchcache.Item{{Type: api.Bookmark, Rev: rev}})
		}
	}
	d.keepItems(items)
	if err == nil && control {
		err = d.sink.sendControl()
	}
	if err != nil {
		d.finish(endGone)
		return stepOver
	}
	if d.sink.stalled() {
		return stepDedicated
	}
	return stepDone
}

func (d *detachedWatch) keepItems(items []watchcache.Item) {
	clear(items)
	d.items = sockwrite.Reuse(items)
}

// afterServe records the outcome of a sender serving d: a watch served
// and level enters its lane, if it may.
func (d *detachedWatch) afterServe(st outcome) {
	if st == stepOver {
		return
	}
	entered := st == stepDone && d.laneSink != nil && d.w.EnterLane(d.laneSink)
	d.mu.Lock()
	defer d.mu.Unlock()
	switch {
	case entered && !d.again:
		d.state = laned
	case entered && !d.w.LeaveLane(): // woken meanwhile: served again, once its slot's holder hands it over
		d.state, d.again = laned, false
	case st == stepDedicated:
		d.state = dedicated
		d.again = false
		if d.wakec == nil {
			d.wakec = make(chan struct{}, 1)
		}
		d.e.goroutine(d.serveDedicated)
	case d.again:
		d.again = false
		d.state = queued
		d.e.pool.push(d)
	default:
		d.state = idle
	}
}

// serveDedicated serves d from a goroutine of its own until it is level
// with the cache and its writes go through, then hands it back to the
// senders.
func (d *detachedWatch) serveDedicated() {
	for {
		if d.serve(false) == stepOver {
			return
		}
		level := !d.w.CatchingUp()
		d.mu.Lock()
		switch {
		case d.again:
			d.again = false
			d.mu.Unlock()
			continue
		case level:
			d.state = idle
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()
		<-d.wakec
	}
}

// finish ends the stream: a last bookmark at a timeout if asked for, the
// terminating chunk unless the client is gone, the connection closed (our
// side only, on a clean end: connSink.close), the watcher stopped and the
// request logged.
func (d *detachedWatch) finish(reason endReason) {
	d.mu.Lock()
	d.state = finished
	d.mu.Unlock()
	for _, t := range []*time.Timer{d.timeout, d.ticker, d.pinger} {
		if t != nil {
			t.Stop()
		}
	}
	d.sink.setNonblocking(false)
	d.sink.boundWrites()
	if reason == endShutdown {
		d.sink.goingAway()
	}
	clean := reason != endGone && (!d.sink.stalled() || d.sink.flush() == nil)
	if clean && reason == endTimeout && d.bookmarks {
		if rev, ok := d.w.Bookmark(); ok {
			clean = d.counted.send(d.enc, []watchcache.Item{{Type: api.Bookmark, Rev: rev}}) == nil
		}
	}
	sent := d.w.LaneSent()
	d.w.Stop()
	if clean {
		d.sink.close()
	} else {
		d.sink.abort()
	}
	d.e.remove(d)
	d.logEnd(d.sink.bytesWritten() + sent)
}

// hijack takes the connection from net/http and writes the response head:
// a chunked response's, or the answer to a WebSocket handshake (ws).
func hijack(w http.ResponseWriter, contentType string, ws *Upgrade) (*connSink, error) {
	conn, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return nil, fmt.Errorf("hijacking a watch connection: %w", err)
	}
	h := w.Header().Clone()
	h.Set("Date", time.Now().UTC().Format(http.TimeFormat))
	status := "200 OK"
	sink := &connSink{conn: conn}
	if ws != nil {
		status = "101 Switching Protocols"
		h.Set("Upgrade", "websocket")
		h.Set("Connection", "Upgrade")
		h.Set("Sec-WebSocket-Accept", ws.Accept)
		if ws.Protocol != "" {
			h.Set("Sec-WebSocket-Protocol", ws.Protocol)
		}
		sink.ws = &wsFraming{}
		if n := brw.Reader.Buffered(); n > 0 {
			early, _ := brw.Reader.Peek(n)
			sink.ws.early = bytes.Clone(early)
		}
	} else {
		h.Set("Content-Type", contentType)
		h.Set("Cache-Control", "no-cache, private")
		h.Set("Transfer-Encoding", "chunked")
		h.Set("Connection", "close") // taken from net/http, the connection ends with the stream
	}
	switch c := conn.(type) {
	case *tls.Conn:
		var ok bool
		if sink.sock, ok = c.NetConn().(*socketConn); !ok && ws == nil {
			conn.Close()
			return nil, errors.New("a TLS watch connection not accepted by watchstream.Listener")
		}
	case syscall.Conn:
		raw, err := c.SyscallConn()
		if err != nil {
			conn.Close()
			return nil, fmt.Errorf("a watch connection's descriptor: %w", err)
		}
		sink.raw = sockwrite.NewWriter(raw)
	}
	var head bytes.Buffer
	head.WriteString("HTTP/1.1 " + status + "\r\n")
	_ = h.Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		conn.Close()
		return nil, fmt.Errorf("writing a watch's response head: %w", err)
	}
	return sink, nil
}

// connSink writes a watch's events as HTTP/1.1 chunks on a hijacked
// connection: everything pending in one chunk and one write. In cleartext
// that is a writev, with the cache's shared object bytes written in place;
// over TLS, one tls.Conn.Write of the chunk copied into one buffer (or
// of the shared event frame, in place), its records gathered by the socket under it and written at once. On a
// WebSocket (ws), the same write carries each event as one message
// (websocket.go). Whoever serves the watch uses it; nothing else does, but
// boundWrites and the watch's reader, which reads conn and closes it after the
// stream's end (readDone).
type connSink struct {
	// What a send reads comes first; conn, ws, raw and sock are set before
	// the watch starts (prefetch reads raw and sock, on each of its first
	// two lines when the sink starts on a line: in its 144-byte size class
	// most start within one, and a line they span is not prefetched).
	conn net.Conn   // TCP, or TLS over sock (over another connection for a WebSocket: no sock)
	ws   *wsFraming // a WebSocket's framing; nil for chunks
	// raw writes conn's socket in cleartext without waiting (nil if it has
	// no descriptor), through the net package's lock on the descriptor:
	// a write after conn's close fails, and never reaches the descriptor,
	// which the system may have given to another connection.
	raw *sockwrite.Writer
	// nonblocking makes a write take only what the socket accepts at once;
	// the rest of its chunk stays in rest (or in sock), and the sink
	// stalled.
	nonblocking bool
	written     int64       // bytes of the body, for the access log
	rest        net.Buffers // cleartext: the unwritten part of the last chunk
	vecs        [][]byte    // the pieces of a send; kept between sends while small
	sock        *socketConn // TLS: the socket under conn, which keeps what a non-blocking write leaves

	head [maxChunkHead]byte
	// bounded is set once the stream's end bounds every write left; the
	// server's shutdown sets it from another goroutine, hence dmu.
	dmu     sync.Mutex
	bounded bool
	// The reader and the stream's end leave the connection's close to
	// whichever of them is done last (readDone, close); guarded by dmu:
	halfShut bool // the stream has ended and our side is closed: readDone closes conn
	readGone bool // the reader is done with conn (or none was started): close closes it
}

// prefetch reads a field of each line of what a send reads; see
// detachedWatch.Prefetch.
func (s *connSink) prefetch() int64 {
	var n int64
	if s.raw != nil {
		n++
	}
	if s.sock != nil {
		n++
	}
	return n
}

// maxChunkHead is a chunk-size line's longest: 16 hex digits and CRLF.
const maxChunkHead = 18

var (
	crlf          = []byte("\r\n")
	lastChunk     = []byte("0\r\n\r\n")
	errEmptyChunk = errors.New("a watch send encoded to no bytes")
)

// send writes items as one chunk. A non-blocking write the socket does not
// take whole is not an error: the rest waits in the sink (stalled) for
// flush.
func (s *connSink) send(e *encoder, items []watchcache.Item) error {
	if s.ws != nil {
		s.wsFrames(e, items)
		return s.write()
	}
	if f, ok := e.sharedFrame(items); ok {
		s.vecs = append(s.vecs[:0], f.chunk)
		s.written += int64(len(f.chunk) - f.head - len(crlf))
		return s.write()
	}
	vecs := append(s.vecs[:0], nil) // the chunk header, once the size is known
	for _, it := range items {
		vecs = e.AppendFrame(vecs, it)
	}
	n := 0
	for _, b := range vecs[1:] {
		n += len(b)
	}
	if n == 0 {
		return errEmptyChunk // a zero-size chunk would end the stream
	}
	vecs[0] = append(strconv.AppendInt(s.head[:0], int64(n), 16), crlf...)
	s.vecs = append(vecs, crlf)
	s.written += int64(n)
	return s.write()
}

// write writes the chunk whose pieces are in s.vecs.
func (s *connSink) write() error {
	if s.sock != nil {
		return s.sendTLS()
	}
	s.rest = net.Buffers(s.vecs)
	return s.flush()
}

// sendTLS writes the chunk in s.vecs over TLS (writeTLS); what the
// socket does not take waits in the socketConn, the sink stalled.
func (s *connSink) sendTLS() error {
	err := s.writeTLS(s.vecs, s.nonblocking)
	s.releaseVecs()
	if errors.Is(err, errWouldBlock) {
		return nil
	}
	return err
}

// writeTLS writes vecs as one tls.Conn.Write (of its one piece, or of the
// pieces copied together into a buffer of plainBufs), whose records the
// socket gathers, then flushes them: what the socket takes at once when
// nonblocking (errWouldBlock if some is left pending), all otherwise.
func (s *connSink) writeTLS(vecs [][]byte, nonblocking bool) error {
	plain, pooled := vecs[0], (*[]byte)(nil)
	if len(vecs) > 1 {
		n := 0
		for _, b := range vecs {
			n += len(b)
		}
		pooled = plainBufs.Get().(*[]byte)
		plain = slices.Grow((*pooled)[:0], n)
		for _, b := range vecs {
			plain = append(plain, b...)
		}
	}
	s.sock.setGathering(true)
	_, err := s.conn.Write(plain)
	if pooled != nil {
		*pooled = plain[:0]
		plainBufs.Put(pooled)
	}
	if err == nil {
		err = s.sock.flush(nonblocking) // which ends the gathering
	} else {
		s.sock.setGathering(false)
	}
	if err != nil && !errors.Is(err, errWouldBlock) {
		return fmt.Errorf("writing watch events: %w", err)
	}
	return err
}

// plainBufs hold a TLS send's pieces copied together, for the length of
// its tls.Conn.Write, which copies them into its records: shared by the
// watches, so that their sends reuse a few buffers warm in the senders'
// caches (a buffer kept per watch, 8 KiB at most, was cold at each
// send, and one larger grew by doubling at each). The collector empties
// the pool.
var plainBufs = sync.Pool{New: func() any { return new([]byte) }}

// flush writes what is left of the last chunk: what the socket takes at
// once when the sink is non-blocking, all of it otherwise.
func (s *connSink) flush() error {
	var err error
	switch {
	case s.sock != nil:
		err = s.sock.flush(s.nonblocking)
	case s.nonblocking: // a goroutine that can wait writes what it leaves (all of it without a descriptor)
		err = s.raw.WriteNow(&s.rest)
	default:
		_, err = s.rest.WriteTo(s.conn)
	}
	if errors.Is(err, errWouldBlock) {
		return nil // stalled: the rest is for a goroutine that can wait
	}
	if s.sock == nil {
		s.rest = nil
		s.releaseVecs()
	}
	if err != nil {
		return fmt.Errorf("writing watch events: %w", err)
	}
	return nil
}

// releaseVecs forgets the pieces of the last chunk, keeping the slice
// while small.
func (s *connSink) releaseVecs() {
	clear(s.vecs)
	s.vecs = sockwrite.Reuse(s.vecs)
}

// errWouldBlock is a non-blocking write's: the socket takes no more now.
var errWouldBlock = sockwrite.ErrWouldBlock

// stalled reports whether the last chunk is not all written.
func (s *connSink) stalled() bool {
	if s.sock != nil {
		return s.sock.stalled()
	}
	return len(s.rest) > 0
}

// boundWrites bounds the writes left, at the stream's end: also those of a
// goroutine blocked in a write when the server shuts down.
func (s *connSink) boundWrites() {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if !s.bounded {
		s.bounded = true
		_ = s.conn.SetWriteDeadline(time.Now().Add(EndWriteGrace))
	}
}

// close ends the body with the terminating chunk (a WebSocket's with its
// close frame) and closes our side of the connection
// (sockwrite.CloseWrite); the reader, which drops what the client sends,
// closes the connection once the client has closed its side, or
// sockwrite.LingerTimeout from now (readDone), so that the client reads
// the stream to its end. If the reader is done already, or a write
// fails, the connection is closed at once.
func (s *connSink) close() {
	end := lastChunk
	if s.ws != nil {
		end = s.ws.closeFrame()
	}
	if _, err := s.conn.Write(end); err != nil {
		s.abort()
		return
	}
	if _, err := sockwrite.CloseWrite(s.conn); err != nil {
		s.abort()
		return
	}
	s.dmu.Lock()
	defer s.dmu.Unlock()
	if s.readGone {
		s.abort() // the end is written
		return
	}
	s.halfShut = true
}

// readDone is the reader's last call, once a read has failed (at the
// client's close, at the linger's end, or at the connection's close), or
// detach's when no reader starts. It closes the connection if the stream
// has ended (close), else leaves the close to the stream's end.
func (s *connSink) readDone() {
	s.dmu.Lock()
	defer s.dmu.Unlock()
	s.readGone = true
	if s.halfShut {
		s.abort() // the end is written
	}
}

// abort closes the connection at once, the stream unfinished (or its end
// written and lingered over: close, readDone): over TLS, the socket,
// without a close_notify that could wait on a client that does not read.
func (s *connSink) abort() {
	if s.sock != nil {
		_ = s.sock.Close()
		return
	}
	_ = s.conn.Close()
}

func (s *connSink) setNonblocking(b bool) { s.nonblocking = b }
func (s *connSink) bytesWritten() int64   { return s.written }
