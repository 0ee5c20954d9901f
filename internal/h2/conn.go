package h2

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/listwatch/listwatch/internal/sockwrite"
)

// Protocol constants (RFC 9113).
const (
	clientPreface   = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"
	defaultWindow   = 65535
	maxWindow       = 1<<31 - 1
	defaultMaxFrame = 16384
	frameHeaderLen  = 9
)

// Receive windows we grant: a request body is buffered up to its stream's
// window, and all of a connection's bodies up to the connection's.
const (
	streamRecvWindow = 256 << 10
	connRecvWindow   = 1 << 20
	// windowUpdateMin batches the WINDOW_UPDATEs a handler's reads earn.
	windowUpdateMin = 16 << 10
)

// Write bounds: a write waiting on the socket longer than writeTimeout
// ends the connection (the client stopped reading).
const writeTimeout = 30 * time.Second

// resetWindow is the period over which Server.MaxResets is counted.
const resetWindow = 10 * time.Second

const (
	noError        = http2.ErrCodeNo
	protocolError  = http2.ErrCodeProtocol
	flowError      = http2.ErrCodeFlowControl
	streamClosed   = http2.ErrCodeStreamClosed
	refusedStream  = http2.ErrCodeRefusedStream
	cancelError    = http2.ErrCodeCancel
	internalError  = http2.ErrCodeInternal
	calmError      = http2.ErrCodeEnhanceYourCalm
	frameSizeError = http2.ErrCodeFrameSize
)

// Errors a stream's writer or body reader sees.
var (
	ErrStreamClosed = errors.New("h2: the stream has ended")
	errConnClosed   = errors.New("h2: the connection has ended")
	errStalled      = errors.New("h2: the write waits for the socket or the window")
)

// connError ends the connection with GOAWAY(code).
type connError struct {
	code   http2.ErrCode
	reason string
}

func (e connError) Error() string {
	return fmt.Sprintf("h2: connection error %v: %s", e.code, e.reason)
}

// conn is one HTTP/2 connection.
type conn struct {
	srv         *Server
	nc          net.Conn
	raw         *sockwrite.Writer // cleartext: non-blocking writes on the descriptor; nil on TLS
	tls         *tls.ConnectionState
	handler     http.Handler
	ctx         context.Context // parent of the requests' contexts; cancelled at the end
	cancel      context.CancelFunc
	br          *bufio.Reader
	rfr         *http2.Framer // the reader's
	handlers    sync.WaitGroup
	done        chan struct{} // closed when the connection has ended
	prefaceRead bool          // net/http read the client's preface
	connState   func(net.Conn, http.ConnState)
	// goAways counts the GOAWAYs being sent (startGoAway to sendGoAway);
	// teardown waits for them.
	goAways sync.WaitGroup

	// Owned by the reader goroutine:
	maxSeen     atomic.Uint32 // highest client stream id seen; set by the reader
	sawSettings bool
	resets      int
	resetsFrom  time.Time
	lastRead    atomic.Int64 // unix nanoseconds of the last frame read
	pingSent    atomic.Int64 // unix nanoseconds of an unanswered PING, 0 if none
	lingerUntil atomic.Int64 // unix nanoseconds: closeWriteNow's read deadline, 0 if none
	idleTimer   *time.Timer
	// idleClose ends the connection after IdleTimeout without a stream:
	// set before the reader starts, stopped by StateActive, reset by
	// StateIdle.
	idleClose *time.Timer

	stateMu  sync.Mutex     // serialises state reports (setState): before mu
	reported http.ConnState // guarded by stateMu: the last state reported

	wmu writeLock // the write side: before mu
	// guarded by wmu:
	wbuf bytes.Buffer   // control frames and HEADERS, written by wfr
	wfr  *http2.Framer  // writes to wbuf
	henc *hpack.Encoder // writes to hbuf
	hbuf bytes.Buffer
	rest []byte // cleartext: a non-blocking write's unwritten remainder: next on the wire
	// vecs holds commit's pieces of a write; kept between writes while
	// small, so that a send allocates none.
	vecs net.Buffers
	werr error // the first write error: the connection is over
	// Every write under wmu that may wait, a Close over TLS too, is
	// between wmu.startBlocking and stopBlocking, so that a writer that
	// must not wait does not wait for it.
	// restOwner is the detached stream whose write left rest, stalled
	// until someone writes rest.
	restOwner atomic.Pointer[Stream]

	// The write queue of a connection without a descriptor (TLS): see
	// queue.go.
	qmu sync.Mutex // a leaf, taken after wmu or without it
	// guarded by qmu:
	out      []*[]byte     // framed, not yet taken by the flusher: chunkPool's buffers
	spare    []*[]byte     // the flusher's last list, for out's next turn
	queued   int64         // bytes ever put in out
	written  int64         // bytes of them the flusher has written
	flushing bool          // a flusher writes: it takes out until it is empty
	writtenc chan struct{} // closed and replaced when written grows or qerr is set
	qerr     error         // the flusher's write error: the connection is over
	qclosed  bool          // torn down: no flusher starts
	flushers sync.WaitGroup

	mu sync.Mutex // a leaf but for body.mu
	// guarded by mu:
	streams     map[uint32]*Stream
	open        int              // the streams that count against MaxConcurrentStreams (Stream.openLocked)
	running     int              // the handlers running: at most MaxConcurrentStreams
	waiting     []waitingHandler // the requests whose handlers wait for one to return, in order
	sendWin     int64            // connection send window
	peerWin     int64            // the client's INITIAL_WINDOW_SIZE
	peerFrame   int              // the client's MAX_FRAME_SIZE
	recvWin     int64            // what the client may still send on the connection
	recvUnacked int64            // read by handlers, not yet granted back
	goingAway   bool
	closed      bool
	windowc     chan struct{} // closed and replaced when a send window grows
	started     bool          // the handshake is done: a GOAWAY may be written
	refuse      bool          // shut down before started: GOAWAY after the handshake
	goAwayDue   bool          // startGoAway's GOAWAY is not written yet
	graceTimer  *time.Timer   // set by a bounded goAway: closes the connection
}

func newConn(s *Server, nc net.Conn, o ConnOptions) *conn {
	parent := o.Context
	if parent == nil {
		parent = context.Background()
	}
	ctx, cancel := context.WithCancel(parent)
	c := &conn{
		srv: s, nc: nc, tls: o.TLS, handler: o.Handler, ctx: ctx, cancel: cancel,
		done: make(chan struct{}), streams: map[uint32]*Stream{},
		sendWin: defaultWindow, peerWin: defaultWindow, peerFrame: defaultMaxFrame,
		recvWin: defaultWindow, windowc: make(chan struct{}), prefaceRead: o.SawPreface, connState: o.ConnState,
		writtenc: make(chan struct{}), wmu: newWriteLock(),
	}
	if sc, ok := nc.(syscall.Conn); ok && o.TLS == nil {
		raw, _ := sc.SyscallConn()
		c.raw = sockwrite.NewWriter(raw)
	}
	c.br = bufio.NewReaderSize(nc, 4<<10)
	c.rfr = http2.NewFramer(nil, newBlockGuard(c.br, s.maxHeaderBytes()))
	c.rfr.SetMaxReadFrameSize(defaultMaxFrame) // the default we advertise
	c.rfr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.rfr.MaxHeaderListSize = s.maxHeaderBytes()
	c.wfr = http2.NewFramer(&c.wbuf, nil)
	c.henc = hpack.NewEncoder(&c.hbuf)
	return c
}

// serve reads the connection until it ends, then ends every stream and
// waits for the handlers.
func (c *conn) serve() {
	defer c.teardown()
	err := c.handshake()
	if err == nil {
		c.mu.Lock()
		c.started = true
		refuse := c.refuse
		c.mu.Unlock()
		if refuse {
			c.goAway(noError, true)
		}
	}
	if err == nil {
		c.startIdleTimer()
		c.idleClose = time.AfterFunc(orDefault(c.srv.IdleTimeout, DefaultIdleTimeout), c.closeIdle)
		err = c.readLoop()
	}
	var ce connError
	if errors.As(err, &ce) {
		c.writeGoAway(ce.code, ce.reason)
		c.closeWriteNow()
		c.drain()
	}
	if err != nil && !errors.Is(err, io.EOF) && !errors.Is(err, net.ErrClosed) {
		c.srv.logger().Debug("h2: connection ended", "remote", c.nc.RemoteAddr().String(), "err", err)
	}
}

// handshake reads the preface (unless net/http did) and sends our
// SETTINGS and the connection window we grant.
func (c *conn) handshake() error {
	if err := c.nc.SetReadDeadline(time.Now().Add(prefaceTimeout)); err != nil {
		return fmt.Errorf("h2: setting the preface deadline: %w", err)
	}
	if !c.prefaceRead {
		if err := c.readPreface(); err != nil {
			return err
		}
	}
	if err := c.nc.SetReadDeadline(time.Now().Add(firstSettingsTimeout)); err != nil {
		return fmt.Errorf("h2: setting the first SETTINGS' deadline: %w", err)
	}
	return c.control(func() error {
		err := c.wfr.WriteSettings(
			http2.Setting{ID: http2.SettingMaxConcurrentStreams, Val: c.srv.maxStreams()},
			http2.Setting{ID: http2.SettingMaxHeaderListSize, Val: c.srv.maxHeaderBytes()},
			http2.Setting{ID: http2.SettingInitialWindowSize, Val: streamRecvWindow},
		)
		c.mu.Lock()
		c.recvWin = connRecvWindow
		c.mu.Unlock()
		return errors.Join(err, c.wfr.WriteWindowUpdate(0, connRecvWindow-defaultWindow))
	})
}

func (c *conn) readPreface() error {
	buf := make([]byte, len(clientPreface))
	if _, err := io.ReadFull(c.br, buf); err != nil {
		return fmt.Errorf("h2: reading the client preface: %w", err)
	}
	if string(buf) != clientPreface {
		return connError{protocolError, "bad client preface"}
	}
	return nil
}

// readLoop reads and handles frames until an error.
func (c *conn) readLoop() error {
	for {
		f, err := c.rfr.ReadFrame()
		c.lastRead.Store(time.Now().UnixNano())
		if err != nil {
			if !c.sawSettings && errors.Is(err, os.ErrDeadlineExceeded) {
				return fmt.Errorf("h2: no SETTINGS from the client within %v: %w", firstSettingsTimeout, err)
			}
			if err = c.readError(err); err != nil {
				return err
			}
			continue
		}
		if !c.sawSettings {
			if sf, ok := f.(*http2.SettingsFrame); !ok || sf.IsAck() {
				return connError{protocolError, "the first frame is not SETTINGS"}
			}
			c.sawSettings = true
			if err := c.clearReadDeadline(); err != nil {
				return err
			}
		}
		if err := c.handle(f); err != nil {
			return err
		}
	}
}

// prefaceTimeout bounds the wait for the client's preface (over TLS; in
// cleartext net/http reads it), as x/net's server does.
const prefaceTimeout = 10 * time.Second

// firstSettingsTimeout bounds the wait for the client's SETTINGS after
// its preface (which they follow at once), as net/http's does: a
// connection that sends only the preface is not kept.
const firstSettingsTimeout = 2 * time.Second

// clearReadDeadline clears the first SETTINGS' deadline, but not the
// linger's if closeWriteNow has set it meanwhile.
func (c *conn) clearReadDeadline() error {
	if err := c.nc.SetReadDeadline(time.Time{}); err != nil {
		return fmt.Errorf("h2: clearing the first SETTINGS' deadline: %w", err)
	}
	if until := c.lingerUntil.Load(); until != 0 {
		_ = c.nc.SetReadDeadline(time.Unix(0, until))
	}
	return nil
}

// refuseLocked reports whether a new stream is refused: the connection
// goes away, or MaxConcurrentStreams streams are open. A stream is open
// until both sides have ended it or one has reset it (RFC 9113 5.1), not
// until its handler returns: a client that opens its next stream as soon
// as it sees the end of the last is not refused (its handler waits for
// the last one's to return: onHeaders). The open streams are counted as
// their ends are set (Stream.closeLocked), not walked: a client at the
// limit made every HEADERS walk them all.
func (c *conn) refuseLocked() bool {
	if checkOpen {
		c.checkOpenLocked()
	}
	return c.goingAway || c.open >= int(c.srv.maxStreams())
}

// checkOpen makes refuseLocked check c.open against a walk of the streams
// (tests set it).
var checkOpen = false

func (c *conn) checkOpenLocked() {
	open := 0
	for _, st := range c.streams {
		if st.openLocked() {
			open++
		}
	}
	if open != c.open {
		panic(fmt.Sprintf("h2: %d streams open, counted %d", open, c.open))
	}
}

// readError turns a frame reading error into a stream reset (nil: go on)
// or the connection's end.
func (c *conn) readError(err error) error {
	var own connError
	if errors.As(err, &own) { // blockGuard's
		return own
	}
	var se http2.StreamError
	if errors.As(err, &se) {
		if se.StreamID > c.maxSeen.Load() { // HEADERS (the framer returns no frame) or WINDOW_UPDATE
			c.maxSeen.Store(se.StreamID) // the stream is closed by the reset
		}
		return c.resetForClient(se.StreamID, se.Code)
	}
	var ce http2.ConnectionError
	if errors.As(err, &ce) {
		return connError{http2.ErrCode(ce), err.Error()}
	}
	if errors.Is(err, http2.ErrFrameTooLarge) {
		return connError{frameSizeError, err.Error()}
	}
	return err
}

// handle dispatches one frame.
func (c *conn) handle(f http2.Frame) error {
	switch f := f.(type) {
	case *http2.MetaHeadersFrame:
		return c.onHeaders(f)
	case *http2.DataFrame:
		return c.onData(f)
	case *http2.SettingsFrame:
		return c.onSettings(f)
	case *http2.PingFrame:
		return c.onPing(f)
	case *http2.WindowUpdateFrame:
		return c.onWindowUpdate(f)
	case *http2.RSTStreamFrame:
		return c.onReset(f)
	case *http2.GoAwayFrame:
		// The client opens no more streams (RFC 9113 6.8): the ones it
		// has run to their end, as net/http lets them, without a grace.
		c.goAway(noError, false)
		return nil
	case *http2.PriorityFrame:
		if f.StreamDep == f.StreamID {
			return c.resetForClient(f.StreamID, protocolError)
		}
		return nil
	case *http2.PushPromiseFrame:
		return connError{protocolError, "PUSH_PROMISE from a client"}
	case *http2.ContinuationFrame:
		return connError{protocolError, "CONTINUATION out of place"}
	}
	return nil // unknown frame types are ignored
}

// onSettings applies the client's settings and acknowledges them under
// the write side, so that no frame goes out between the two: a DATA frame
// a larger window let through reaches the client after the ACK, as one
// whose window it changed expects (h2spec 6.9.2/1 waits for the ACK, then
// for the DATA, and missed a DATA written before the ACK).
func (c *conn) onSettings(f *http2.SettingsFrame) error {
	if f.IsAck() {
		return nil
	}
	if f.NumSettings() > maxSettings {
		return connError{protocolError, fmt.Sprintf("a SETTINGS frame of more than %d settings", maxSettings)}
	}
	c.lockWriter()
	defer c.wmu.Unlock()
	if err := f.ForeachSetting(c.applySettingLocked); err != nil {
		return err
	}
	return c.controlLocked(c.wfr.WriteSettingsAck)
}

// maxSettings bounds a SETTINGS frame's settings, as x/net's server does:
// RFC 9113 defines 6, and each INITIAL_WINDOW_SIZE walks the streams.
// (x/net also refuses a setting twice, which RFC 9113 6.5.3 and h2spec
// want applied in order.)
const maxSettings = 100

// applySettingLocked applies one setting, under wmu.
func (c *conn) applySettingLocked(s http2.Setting) error {
	if err := s.Valid(); err != nil {
		var ce http2.ConnectionError
		if errors.As(err, &ce) {
			return connError{http2.ErrCode(ce), "invalid setting " + s.String()}
		}
		return connError{protocolError, "invalid setting " + s.String()}
	}
	switch s.ID {
	case http2.SettingInitialWindowSize:
		return c.setPeerWindow(int64(s.Val))
	case http2.SettingMaxFrameSize:
		c.mu.Lock()
		c.peerFrame = int(s.Val)
		c.mu.Unlock()
	case http2.SettingHeaderTableSize:
		c.henc.SetMaxDynamicTableSizeLimit(s.Val)
	}
	return nil
}

// setPeerWindow applies a new INITIAL_WINDOW_SIZE to every stream's send
// window (RFC 9113 6.9.2).
func (c *conn) setPeerWindow(w int64) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	delta := w - c.peerWin
	c.peerWin = w
	for _, st := range c.streams {
		st.sendWin += delta
		if st.sendWin > maxWindow {
			return connError{flowError, "INITIAL_WINDOW_SIZE overflows a stream window"}
		}
	}
	c.windowGrewLocked()
	return nil
}

func (c *conn) onPing(f *http2.PingFrame) error {
	if f.StreamID != 0 {
		return connError{protocolError, "PING on a stream"}
	}
	if f.IsAck() {
		c.pingSent.Store(0)
		return nil
	}
	return c.control(func() error { return c.wfr.WritePing(true, f.Data) })
}

func (c *conn) onWindowUpdate(f *http2.WindowUpdateFrame) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if f.StreamID == 0 {
		c.sendWin += int64(f.Increment)
		if c.sendWin > maxWindow {
			return connError{flowError, "connection window overflow"}
		}
		c.windowGrewLocked()
		return nil
	}
	if f.StreamID > c.maxSeen.Load() {
		return connError{protocolError, "WINDOW_UPDATE on an idle stream"}
	}
	st := c.streams[f.StreamID]
	if st == nil {
		return nil // closed: ignored
	}
	st.sendWin += int64(f.Increment)
	if st.sendWin > maxWindow {
		c.mu.Unlock()
		defer c.mu.Lock()
		return c.resetForClient(f.StreamID, flowError)
	}
	c.windowGrewLocked()
	return nil
}

// windowGrewLocked wakes the writers waiting for a window.
func (c *conn) windowGrewLocked() {
	close(c.windowc)
	c.windowc = make(chan struct{})
}

func (c *conn) onReset(f *http2.RSTStreamFrame) error {
	if f.StreamID > c.maxSeen.Load() {
		return connError{protocolError, "RST_STREAM on an idle stream"}
	}
	if err := c.countReset(); err != nil {
		return err
	}
	c.mu.Lock()
	st := c.streams[f.StreamID]
	c.mu.Unlock()
	if st != nil {
		st.end(fmt.Errorf("%w: reset by the client (%v)", ErrStreamClosed, f.ErrCode), false)
	}
	return nil
}

// countReset bounds the streams reset, by the client (rapid reset,
// CVE-2023-44487) or by us because of its frames (MadeYouReset,
// CVE-2025-8671: a stream error frees the client's stream slot as its
// own RST_STREAM would), to MaxResets per resetWindow; one more ends the
// connection with ENHANCE_YOUR_CALM.
func (c *conn) countReset() error {
	now := time.Now()
	if now.Sub(c.resetsFrom) > resetWindow {
		c.resets, c.resetsFrom = 0, now
	}
	c.resets++
	if c.resets > c.srv.maxResets() {
		return connError{calmError, "too many stream resets"}
	}
	return nil
}

// resetForClient is resetStream for a stream error the client's frames
// caused (RFC 9113 5.4.2), called by the reader: it counts against
// MaxResets.
func (c *conn) resetForClient(id uint32, code http2.ErrCode) error {
	if err := c.countReset(); err != nil {
		return err
	}
	c.resetStream(id, code)
	return nil
}

// resetStream sends RST_STREAM and ends the stream, if it is open.
func (c *conn) resetStream(id uint32, code http2.ErrCode) {
	c.mu.Lock()
	st := c.streams[id]
	if st != nil {
		st.resetSent = true
	}
	c.mu.Unlock()
	if st != nil {
		st.end(fmt.Errorf("%w: reset (%v)", ErrStreamClosed, code), false)
	}
	_ = c.control(func() error { return c.wfr.WriteRSTStream(id, code) })
}

// control writes the frames write puts in wbuf, waiting on the socket
// if it must.
func (c *conn) control(write func() error) error {
	c.lockWriter()
	defer c.wmu.Unlock()
	return c.controlLocked(write)
}

// controlLocked is control under wmu.
func (c *conn) controlLocked(write func() error) error {
	if errors.Is(c.werr, errWriteClosed) {
		return nil // going away: the client's frames are read, not answered
	}
	if c.werr != nil {
		return c.werr
	}
	if err := write(); err != nil {
		return fmt.Errorf("h2: framing: %w", err)
	}
	return c.commit(nil, false, time.Time{})
}

// lockWriter takes the write side, waiting for it.
func (c *conn) lockWriter() { c.wmu.Lock() }

// commit writes, under wmu: first what a non-blocking write left, then
// wbuf, then data. On a connection with a descriptor (cleartext), it
// writes them itself: non-blocking, what the socket takes at once,
// keeping a copy of the rest for the next writer (errStalled); otherwise
// waiting, until deadline if set (else writeTimeout). On any other (TLS)
// it puts them in the write queue, which a flusher writes (queue.go);
// unless non-blocking, it waits while the queue is full.
func (c *conn) commit(data net.Buffers, nonblocking bool, deadline time.Time) error {
	vecs := c.vecs[:0]
	if len(c.rest) > 0 {
		vecs = append(vecs, c.rest)
	}
	if c.wbuf.Len() > 0 {
		vecs = append(vecs, c.wbuf.Bytes())
	}
	vecs = append(vecs, data...)
	if len(vecs) == 0 {
		return nil
	}
	c.vecs = vecs // writeNow consumes it in place
	var err error
	switch {
	case c.raw == nil:
		err = c.writeQueued(vecs, nonblocking, deadline)
	case nonblocking:
		err = c.writeNow(&c.vecs)
	default:
		err = c.writeWait(vecs, deadline)
	}
	clear(vecs) // written, or copied into rest or the queue: keep none of it
	c.vecs = sockwrite.Reuse(vecs)
	c.wbuf.Reset()
	if err != nil && !errors.Is(err, errStalled) {
		c.werr = err
		started := c.wmu.startBlocking() // tls.Conn.Close writes its close_notify
		_ = c.nc.Close()
		if started {
			c.wmu.stopBlocking()
		}
	}
	return err
}

// writeNow writes what the socket takes at once; the rest becomes
// c.rest (errStalled).
func (c *conn) writeNow(vecs *net.Buffers) error {
	rest, err := c.raw.WriteNowKeep(nil, vecs) // a fresh copy: the old rest may be among vecs
	if err != nil && !errors.Is(err, sockwrite.ErrWouldBlock) {
		return fmt.Errorf("h2: writing: %w", err)
	}
	if len(rest) == 0 {
		rest = nil
		c.restOwner.Store(nil)
	}
	c.rest = rest
	if len(rest) > 0 {
		return errStalled
	}
	return nil
}

// writeWait writes vecs whole on the descriptor's connection, waiting on
// the socket (blocking: writeLock.startBlocking).
func (c *conn) writeWait(vecs net.Buffers, deadline time.Time) error {
	if deadline.IsZero() {
		deadline = time.Now().Add(writeTimeout)
	}
	if c.wmu.startBlocking() {
		defer c.wmu.stopBlocking()
	}
	if err := c.nc.SetWriteDeadline(deadline); err != nil {
		return fmt.Errorf("h2: setting a write deadline: %w", err)
	}
	if _, err := vecs.WriteTo(c.nc); err != nil {
		return fmt.Errorf("h2: writing: %w", err)
	}
	c.rest = nil
	c.restOwner.Store(nil)
	return nil
}

// goAway starts a graceful end (RFC 9113 6.8): GOAWAY with the last
// stream seen, no new streams, the connection closed when its last stream
// ends; bounded (Shutdown), after ShutdownGrace at the latest, whatever
// its streams and its writes wait for.
func (c *conn) goAway(code http2.ErrCode, bounded bool) {
	if c.startGoAway(bounded) {
		c.sendGoAway(code)
	}
}

// shutdown is a bounded goAway(noError) that does not wait: the GOAWAY's
// write, which waits for a client that does not read, is left to a
// goroutine that teardown waits for and the grace ends.
func (c *conn) shutdown() {
	if c.startGoAway(true) {
		go c.sendGoAway(noError)
	}
}

// startGoAway refuses new streams and, bounded, starts the grace (before
// any write: a write that outlives it is ended by the connection's
// close). It reports whether the caller is to send the GOAWAY: then it
// must call sendGoAway. Before the handshake it leaves the GOAWAY to the
// reader, after our SETTINGS.
func (c *conn) startGoAway(bounded bool) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return false
	}
	if bounded && c.graceTimer == nil {
		c.graceTimer = time.AfterFunc(orDefault(c.srv.ShutdownGrace, DefaultShutdownGrace), func() { _ = c.nc.Close() })
	}
	if !c.started {
		c.refuse = true
		return false
	}
	if c.goingAway {
		return false
	}
	c.goingAway, c.goAwayDue = true, true
	c.goAways.Add(1)
	return true
}

// sendGoAway writes the GOAWAY startGoAway asked for, and closes our side
// if no stream is left (else the last stream's end does).
func (c *conn) sendGoAway(code http2.ErrCode) {
	defer c.goAways.Done()
	c.writeGoAway(code, "")
	c.mu.Lock()
	c.goAwayDue = false
	idle := len(c.streams) == 0
	c.mu.Unlock()
	if idle {
		c.closeWriteNow()
	}
}

func (c *conn) writeGoAway(code http2.ErrCode, reason string) {
	last := c.maxSeen.Load()
	_ = c.control(func() error { return c.wfr.WriteGoAway(last, code, []byte(reason)) })
}

// startIdleTimer pings a silent connection and closes one that does not
// answer.
func (c *conn) startIdleTimer() {
	idle := orDefault(c.srv.ReadIdleTimeout, DefaultReadIdleTimeout)
	ping := orDefault(c.srv.PingTimeout, DefaultPingTimeout)
	c.lastRead.Store(time.Now().UnixNano())
	c.idleTimer = time.AfterFunc(idle, func() { c.checkIdle(idle, ping) })
}

func (c *conn) checkIdle(idle, ping time.Duration) {
	if c.ctx.Err() != nil {
		return // torn down while this ran: no re-arming
	}
	now := time.Now()
	if sent := c.pingSent.Load(); sent != 0 {
		if now.Sub(time.Unix(0, sent)) >= ping {
			_ = c.nc.Close() // no answer
			return
		}
		c.idleTimer.Reset(ping - now.Sub(time.Unix(0, sent)))
		return
	}
	silent := now.Sub(time.Unix(0, c.lastRead.Load()))
	if silent < idle {
		c.idleTimer.Reset(idle - silent)
		return
	}
	c.pingSent.Store(now.UnixNano())
	_ = c.control(func() error { return c.wfr.WritePing(false, [8]byte{'l', 'w'}) })
	c.idleTimer.Reset(ping)
}

// errWriteClosed is the write side's state after closeWrite.
var errWriteClosed = errors.New("h2: the connection's write side is closed")

// closeWrite is closeWriteNow once the GOAWAY is written: a stream that
// ends while the GOAWAY waits to be written leaves the close to
// sendGoAway.
func (c *conn) closeWrite() {
	c.mu.Lock()
	due := c.goAwayDue
	c.mu.Unlock()
	if !due {
		c.closeWriteNow()
	}
}

// closeWriteNow closes our side after the GOAWAY (sockwrite.CloseWrite:
// over TLS a close_notify, and a FIN): the reader then ends at the
// client's close, or after sockwrite.LingerTimeout. Closing the socket at
// once would make the kernel reset it if the client had sent more
// meanwhile, and the client could lose the GOAWAY.
func (c *conn) closeWriteNow() {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if c.werr != nil {
		return
	}
	c.werr = errWriteClosed
	if c.wmu.startBlocking() { // tls.Conn's CloseWrite writes its close_notify
		defer c.wmu.stopBlocking()
	}
	if c.raw == nil {
		_ = c.drainQueue() // what is queued goes before the close
	}
	until, err := sockwrite.CloseWrite(c.nc)
	if err != nil {
		_ = c.nc.Close()
		return
	}
	c.lingerUntil.Store(until.UnixNano())
}

// maxDrain bounds what drain reads.
const maxDrain = 1 << 20

// drain reads what the client sends until it closes, for at most
// sockwrite.LingerTimeout (set by closeWrite) and maxDrain bytes.
func (c *conn) drain() {
	_, _ = io.CopyN(io.Discard, c.br, maxDrain)
}

// closeIdle ends a connection that has had no stream for IdleTimeout:
// GOAWAY(NO_ERROR), then the close. A stream that began meanwhile runs to
// its end, without a grace.
func (c *conn) closeIdle() {
	c.mu.Lock()
	busy := len(c.streams) > 0
	c.mu.Unlock()
	if !busy { // else its end resets the timer
		c.goAway(noError, false)
	}
}

// updateState reports the connection Active while it has a stream and
// Idle once it has none. Reports are serialised, each made from the
// streams as they are when it is made, and none follows Closed: a stream
// starting as another ends cannot leave a late Idle over an Active.
func (c *conn) updateState() {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	c.mu.Lock()
	state := http.StateIdle
	if len(c.streams) > 0 {
		state = http.StateActive
	}
	c.mu.Unlock()
	if c.reported != state && c.reported != http.StateClosed {
		c.setStateLocked(state)
	}
}

// setState reports the connection's state to ConnOptions.ConnState, and
// runs the idle timeout while it has no stream.
func (c *conn) setState(state http.ConnState) {
	c.stateMu.Lock()
	defer c.stateMu.Unlock()
	c.setStateLocked(state)
}

func (c *conn) setStateLocked(state http.ConnState) {
	c.reported = state
	if c.idleClose != nil {
		switch state {
		case http.StateActive, http.StateClosed:
			c.idleClose.Stop()
		case http.StateIdle:
			c.idleClose.Reset(orDefault(c.srv.IdleTimeout, DefaultIdleTimeout))
		}
	}
	if c.connState != nil {
		c.connState(c.nc, state)
	}
}

// teardown ends every stream, closes the connection and waits for the
// handlers.
func (c *conn) teardown() {
	c.mu.Lock()
	c.closed = true
	if c.graceTimer != nil {
		c.graceTimer.Stop()
	}
	streams := make([]*Stream, 0, len(c.streams))
	for _, st := range c.streams {
		streams = append(streams, st)
	}
	c.windowGrewLocked()
	c.mu.Unlock()
	if c.idleTimer != nil {
		c.idleTimer.Stop()
	}
	_ = c.nc.Close()
	c.cancel()
	close(c.done)
	c.setState(http.StateClosed)
	for _, st := range streams {
		st.end(errConnClosed, false)
	}
	c.handlers.Wait()
	c.goAways.Wait()
	c.closeQueue()
}
