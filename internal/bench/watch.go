package bench

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
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// Transports a watcher can use.
const (
	TransportHTTP1 = "http1" // one connection per watch, chunked (with TLS: ALPN http/1.1)
	TransportH2C   = "h2c"   // HTTP/2 in cleartext, watches multiplexed
	TransportH2    = "h2"    // HTTP/2 over TLS (ALPN h2), watches multiplexed
)

// Readers of watch streams, in the load generator.
const (
	// ReaderGoroutine reads each watch with its own goroutine, through
	// net/http's chunked reader: every transport.
	ReaderGoroutine = "goroutine"
	// ReaderEpoll reads HTTP/1.1 cleartext watches with a few epoll loops
	// decoding the chunks in place (Linux only): much less CPU per
	// delivery, so the load generator takes less from the server.
	ReaderEpoll = "epoll"
)

// resolveReader checks reader against the transport and picks the default
// for "": epoll where it can read the transport, goroutines elsewhere.
func resolveReader(reader, transport string, tls bool) (string, error) {
	epollOK := epollSupported && transport == TransportHTTP1 && !tls
	switch {
	case reader == "" && epollOK, reader == ReaderEpoll && epollOK:
		return ReaderEpoll, nil
	case reader == "", reader == ReaderGoroutine:
		return ReaderGoroutine, nil
	case reader == ReaderEpoll:
		return "", fmt.Errorf("--reader %s: needs --transport %s without --tls, on Linux", reader, TransportHTTP1)
	}
	return "", fmt.Errorf("--reader %q: must be %s or %s", reader, ReaderGoroutine, ReaderEpoll)
}

// deliveries counts and times what every watcher of a run received.
type deliveries struct {
	received   atomic.Int64 // events with a resourceVersion beyond the last seen
	duplicates atomic.Int64 // events at or before the last seen
	errors     atomic.Int64 // ERROR events and lines without a resourceVersion
	bytes      atomic.Int64 // bytes of received events
	latency    histogram
}

// watchSet is a run's open watches; close stops their readers.
type watchSet struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup  // the goroutine readers
	h2     *http.Transport // h2c and h2 only
	ep     *epollReaders   // with ReaderEpoll only; it owns its watches' sockets
}

// watchSpec says what to watch, from where and how.
type watchSpec struct {
	base      string // http://host:port or https://host:port
	path      string // request path and query
	transport string
	tls       *tls.Config // for https: whom to trust
	token     string      // bearer token, if any
	startRV   int64       // events at or before it are not counted
	reader    string      // ReaderGoroutine or ReaderEpoll (http1 cleartext only)
}

// dialConcurrency bounds watches being opened at once.
const dialConcurrency = 64

// openWatches opens n watches and starts a reader on each, counting into
// d. It returns once every watch has its response headers.
func openWatches(ctx context.Context, spec watchSpec, n int, d *deliveries) (*watchSet, error) {
	ctx, cancel := context.WithCancel(ctx)
	ws := &watchSet{cancel: cancel}
	switch spec.transport {
	case TransportH2C:
		ws.h2 = h2cTransport()
	case TransportH2:
		ws.h2 = h2Transport(spec.tls)
	}
	if spec.reader == ReaderEpoll {
		ep, err := newEpollReaders(d)
		if err != nil {
			cancel()
			return nil, err
		}
		ws.ep = ep
	}
	sem := make(chan struct{}, dialConcurrency)
	errc := make(chan error, 1)
	var opening sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		opening.Go(func() {
			defer func() { <-sem }()
			if err := ws.start(ctx, spec, i, d); err != nil {
				select {
				case errc <- fmt.Errorf("opening watch %d of %d: %w", i+1, n, err):
				default:
				}
				cancel()
			}
		})
	}
	opening.Wait()
	select {
	case err := <-errc:
		ws.close()
		return nil, err
	default:
		return ws, ctx.Err()
	}
}

// close ends every watch and waits for its reader.
func (ws *watchSet) close() {
	ws.cancel()
	if ws.ep != nil {
		ws.ep.close()
	}
	ws.wg.Wait()
	if ws.h2 != nil {
		ws.h2.CloseIdleConnections()
	}
}

// start opens watch number shard and hands it to its reader.
func (ws *watchSet) start(ctx context.Context, spec watchSpec, shard int, d *deliveries) error {
	if ws.ep != nil {
		return ws.startEpoll(ctx, spec, shard)
	}
	body, err := ws.open(ctx, spec)
	if err != nil {
		return err
	}
	ws.wg.Go(func() { readEvents(body, spec.startRV, shard, d) })
	return nil
}

// startEpoll opens an HTTP/1.1 watch and gives its connection to the epoll
// readers, with the body bytes read along with the headers.
func (ws *watchSet) startEpoll(ctx context.Context, spec watchSpec, shard int) error {
	s, err := dialHTTP1(ctx, spec)
	if err != nil {
		return err
	}
	if !slices.Contains(s.resp.TransferEncoding, "chunked") {
		s.stop()
		s.raw.Close()
		return fmt.Errorf("the epoll reader needs a chunked watch, got transfer encoding %q", s.resp.TransferEncoding)
	}
	if !s.stop() { // ctx has ended and is closing the connection
		return fmt.Errorf("handing the watch to its reader: %w", context.Cause(ctx))
	}
	buffered, _ := s.br.Peek(s.br.Buffered())
	return ws.ep.add(s.raw, buffered, spec.startRV, shard)
}

// open starts one watch and returns its body, which ctx's end closes.
func (ws *watchSet) open(ctx context.Context, spec watchSpec) (io.ReadCloser, error) {
	if ws.h2 != nil {
		return openH2(ctx, ws.h2, spec.base+spec.path, spec.token)
	}
	return openHTTP1(ctx, spec)
}

// headerTimeout bounds the wait for a watch's response headers.
const headerTimeout = 30 * time.Second

// openHTTP1 sends a GET on its own connection (over TLS for https, ALPN
// http/1.1) and reads the response headers; the body reads the chunked
// stream straight from the socket (or the TLS connection).
func openHTTP1(ctx context.Context, spec watchSpec) (io.ReadCloser, error) {
	s, err := dialHTTP1(ctx, spec)
	if err != nil {
		return nil, err
	}
	return &connBody{Reader: s.resp.Body, conn: s.raw, stop: s.stop}, nil
}

// http1Stream is an HTTP/1.1 watch whose response headers have been read.
type http1Stream struct {
	raw  net.Conn       // the TCP connection, which ctx's end closes until stop
	stop func() bool    // stops ctx's end from closing raw; false if too late
	resp *http.Response // its Body decodes the chunked stream from br
	br   *bufio.Reader  // may hold the body's first bytes, read with the headers
}

// dialHTTP1 dials spec's server (with TLS for https), sends the watch
// request and reads the response headers.
func dialHTTP1(ctx context.Context, spec watchSpec) (*http1Stream, error) {
	addr := hostPort(spec.base)
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	fail := func(err error) (*http1Stream, error) {
		stop()
		raw.Close()
		return nil, err
	}
	_ = raw.SetDeadline(time.Now().Add(headerTimeout))
	conn := raw
	if isHTTPS(spec.base) {
		t, err := handshakeHTTP1(ctx, raw, addr, spec.tls)
		if err != nil {
			return fail(err)
		}
		conn = t
	}
	br := bufio.NewReaderSize(conn, 4<<10)
	resp, err := roundTripRaw(conn, br, addr, spec.path, spec.token)
	if err != nil {
		return fail(err)
	}
	_ = raw.SetDeadline(time.Time{})
	return &http1Stream{raw: raw, stop: stop, resp: resp, br: br}, nil
}

// roundTripRaw writes a watch request on conn and reads the response's
// headers from br, which reads conn.
func roundTripRaw(conn net.Conn, br *bufio.Reader, host, path, token string) (*http.Response, error) {
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json\r\nUser-Agent: listwatch-bench\r\n" + authorization(token) + "\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, fmt.Errorf("sending the watch request: %w", err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return nil, fmt.Errorf("reading the watch response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("watch answered %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return resp, nil
}

// connBody is a raw connection's response body; Close closes the
// connection (the TCP one under TLS: the run is over, no close_notify).
type connBody struct {
	io.Reader
	conn net.Conn
	stop func() bool
}

func (b *connBody) Close() error {
	b.stop()
	return b.conn.Close()
}

// h2cTransport speaks HTTP/2 with prior knowledge; the transport opens a
// new connection only when the server's stream limit is reached.
func h2cTransport() *http.Transport {
	var p http.Protocols
	p.SetUnencryptedHTTP2(true)
	return &http.Transport{Protocols: &p}
}

// h2Transport speaks HTTP/2 over TLS (ALPN h2) alone, trusting tc's roots.
func h2Transport(tc *tls.Config) *http.Transport {
	var p http.Protocols
	p.SetHTTP2(true)
	return &http.Transport{Protocols: &p, TLSClientConfig: tc.Clone()}
}

// openH2 opens a watch on an HTTP/2 transport, h2c or h2.
func openH2(ctx context.Context, tr *http.Transport, url, token string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("making the watch request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := roundTripBounded(ctx, tr, req)
	if err != nil {
		return nil, fmt.Errorf("watch request: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("watch answered %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	return resp.Body, nil
}

// roundTripBounded sends req, giving up on the response headers after
// headerTimeout; the body stays open until ctx ends.
func roundTripBounded(ctx context.Context, tr *http.Transport, req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(headerTimeout, cancel)
	resp, err := tr.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() || err != nil {
		cancel()
		if err == nil {
			resp.Body.Close()
			err = context.DeadlineExceeded
		}
		return nil, err
	}
	return resp, nil
}

// readBufferSize is a watcher's line buffer; longer lines are assembled.
const readBufferSize = 16 << 10

// readEvents reads body line by line until it ends, counting every event
// into d. shard spreads the histogram's recorders.
func readEvents(body io.ReadCloser, startRV int64, shard int, d *deliveries) {
	defer body.Close()
	br := bufio.NewReaderSize(body, readBufferSize)
	last := startRV
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 1 {
			d.observe(line, &last, shard, time.Now())
		}
		if err != nil {
			return
		}
	}
}

var (
	errorPrefix    = []byte(`{"type":"ERROR"`)
	bookmarkPrefix = []byte(`{"type":"BOOKMARK"`)
	rvField        = []byte(`"resourceVersion":"`)
	tsField        = []byte(`"ts":"`)
)

// observe counts one event line received at now: its resourceVersion
// (against *last, for duplicates) and its write time (for latency).
func (d *deliveries) observe(line []byte, last *int64, shard int, now time.Time) {
	switch {
	case bytes.HasPrefix(line, errorPrefix):
		d.errors.Add(1)
		return
	case bytes.HasPrefix(line, bookmarkPrefix):
		return
	}
	d.bytes.Add(int64(len(line)))
	rv, ok := scanInt(line, rvField, bytes.Index)
	if !ok {
		d.errors.Add(1)
		return
	}
	if rv <= *last {
		d.duplicates.Add(1)
		return
	}
	*last = rv
	d.received.Add(1)
	// The write time follows the padding (the server sorts data's keys;
	// the bare baseline writes it last): searched from the end, the padding
	// is not scanned (0.3 µs of a reader's 10 per delivery).
	if ts, ok := scanInt(line, tsField, bytes.LastIndex); ok {
		d.latency.record(shard, now.Sub(time.Unix(0, ts)))
	}
}

// scanInt finds field (ending in a quote) in line with index and parses
// the digits after it.
func scanInt(line, field []byte, index func(s, sep []byte) int) (int64, bool) {
	i := index(line, field)
	if i < 0 {
		return 0, false
	}
	rest := line[i+len(field):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 {
		return 0, false
	}
	n, err := strconv.ParseInt(string(rest[:j]), 10, 64)
	return n, err == nil
}

// waitReceived waits until d has want deliveries, ctx ends or timeout
// passes, and says whether it got them.
func waitReceived(ctx context.Context, d *deliveries, want int64, timeout time.Duration) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for d.received.Load() < want {
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-tick.C:
		}
	}
	return true
}
