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
	wg     sync.WaitGroup
	h2     *http.Transport // h2c and h2 only
}

// watchSpec says what to watch, from where and how.
type watchSpec struct {
	base      string // http://host:port or https://host:port
	path      string // request path and query
	transport string
	tls       *tls.Config // for https: whom to trust
	startRV   int64       // events at or before it are not counted
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
	sem := make(chan struct{}, dialConcurrency)
	errc := make(chan error, 1)
	var opening sync.WaitGroup
	for i := range n {
		sem <- struct{}{}
		opening.Go(func() {
			defer func() { <-sem }()
			body, err := ws.open(ctx, spec)
			if err != nil {
				select {
				case errc <- fmt.Errorf("opening watch %d of %d: %w", i+1, n, err):
				default:
				}
				cancel()
				return
			}
			ws.wg.Go(func() { readEvents(body, spec.startRV, i, d) })
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
	ws.wg.Wait()
	if ws.h2 != nil {
		ws.h2.CloseIdleConnections()
	}
}

// open starts one watch and returns its body, which ctx's end closes.
func (ws *watchSet) open(ctx context.Context, spec watchSpec) (io.ReadCloser, error) {
	if ws.h2 != nil {
		return openH2(ctx, ws.h2, spec.base+spec.path)
	}
	return openHTTP1(ctx, spec)
}

// headerTimeout bounds the wait for a watch's response headers.
const headerTimeout = 30 * time.Second

// openHTTP1 sends a GET on its own connection (over TLS for https, ALPN
// http/1.1) and reads the response headers; the body reads the chunked
// stream straight from the socket (or the TLS connection).
func openHTTP1(ctx context.Context, spec watchSpec) (io.ReadCloser, error) {
	addr := hostPort(spec.base)
	var d net.Dialer
	raw, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("dialling %s: %w", addr, err)
	}
	stop := context.AfterFunc(ctx, func() { raw.Close() })
	fail := func(err error) (io.ReadCloser, error) {
		stop()
		raw.Close()
		return nil, err
	}
	_ = raw.SetDeadline(time.Now().Add(headerTimeout))
	conn := raw
	if isHTTPS(spec.base) {
		tc := spec.tls.Clone()
		tc.NextProtos = []string{"http/1.1"}
		if tc.ServerName == "" {
			tc.ServerName, _, _ = net.SplitHostPort(addr)
		}
		t := tls.Client(raw, tc)
		if err := t.HandshakeContext(ctx); err != nil {
			return fail(fmt.Errorf("TLS handshake with %s: %w", addr, err))
		}
		conn = t
	}
	resp, err := roundTripRaw(conn, addr, spec.path)
	if err != nil {
		return fail(err)
	}
	_ = raw.SetDeadline(time.Time{})
	return &connBody{Reader: resp.Body, conn: raw, stop: stop}, nil
}

// roundTripRaw writes a watch request and reads the response's headers.
func roundTripRaw(conn net.Conn, host, path string) (*http.Response, error) {
	req := "GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\nAccept: application/json\r\nUser-Agent: listwatch-bench\r\n\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		return nil, fmt.Errorf("sending the watch request: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 4<<10), nil)
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
func openH2(ctx context.Context, tr *http.Transport, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("making the watch request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
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
	rv, ok := scanInt(line, rvField)
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
	if ts, ok := scanInt(line, tsField); ok {
		d.latency.record(shard, now.Sub(time.Unix(0, ts)))
	}
}

// scanInt finds field (ending in a quote) in line and parses the digits
// after it.
func scanInt(line, field []byte) (int64, bool) {
	i := bytes.Index(line, field)
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
