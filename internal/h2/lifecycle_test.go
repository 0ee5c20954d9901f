package h2_test

// Lifecycle tests: how connections end (Shutdown, the client's GOAWAY,
// timeouts) and how streams are counted while they run.

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/listwatch/listwatch/internal/h2"
)

// readToEnd reads c until the connection ends, for at most advWait.
func readToEnd(t testing.TB, c *advClient) {
	t.Helper()
	b := make([]byte, 1<<20)
	deadline := time.Now().Add(advWait)
	_ = c.nc.SetReadDeadline(deadline)
	for {
		if _, err := c.nc.Read(b); err != nil {
			if time.Now().After(deadline) {
				t.Fatalf("the connection still open after %v", advWait)
			}
			return
		}
	}
}

// TestShutdownClientNotReading: Shutdown with a client that does not
// read (its socket full with a detached stream's stalled send) returns
// at once, another connection gets its GOAWAY at once, and the first
// ends within ShutdownGrace though its GOAWAY cannot be written.
func TestShutdownClientNotReading(t *testing.T) {
	noLeaks(t)
	streams := make(chan *h2.Stream, 1)
	srv := &h2.Server{ShutdownGrace: 500 * time.Millisecond}
	s := startAdv(t, srv, detacher(t, streams, func() {}))
	stuck := s.dialOpen(t)
	stuck.headers(1, true, advGet("/")...)
	st := <-streams
	if err := st.Send([][]byte{make([]byte, 32<<20)}, true); err != nil {
		t.Fatal(err)
	}
	if !st.Stalled() {
		t.Fatal("32 MiB went at once")
	}
	other := s.dial(t)
	other.wantOK(1)

	start := time.Now()
	srv.Shutdown()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown (documented not to wait) returned after %v", d)
	}
	other.wantGoAway(http2.ErrCodeNo)
	if d := time.Since(start); d > time.Second {
		t.Errorf("the other connection's GOAWAY came %v after Shutdown", d)
	}
	readToEnd(t, stuck)
	if d := time.Since(start); d > srv.ShutdownGrace+2*time.Second {
		t.Errorf("the connection that did not read ended %v after Shutdown, grace %v", d, srv.ShutdownGrace)
	}
}

// TestShutdownSlowReader: Shutdown while a handler's Write waits on a
// client that does not read (windows open, so only the socket holds it):
// Shutdown returns at once and the handler's write ends with the grace.
func TestShutdownSlowReader(t *testing.T) {
	noLeaks(t)
	srv := &h2.Server{ShutdownGrace: 500 * time.Millisecond}
	s, running := startWriting(t, srv, 64<<20)
	c := s.dialOpen(t)
	c.headers(1, true, advGet("/")...)
	waitFor(t, "the handler", func() bool { return running.Load() == 1 })
	start := time.Now()
	srv.Shutdown()
	if d := time.Since(start); d > time.Second {
		t.Errorf("Shutdown returned after %v", d)
	}
	waitFor(t, "the handler's end", func() bool { return running.Load() == 0 })
	if d := time.Since(start); d > srv.ShutdownGrace+2*time.Second {
		t.Errorf("the handler ended %v after Shutdown, grace %v", d, srv.ShutdownGrace)
	}
}

// TestContinuationCount (CVE-2023-45288): a header block of endless empty
// CONTINUATION frames ends the connection; the request at its end is not
// served.
func TestContinuationCount(t *testing.T) {
	noLeaks(t)
	var served atomic.Int64
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	c := s.dial(t)
	block := c.block(advGet("/")...)
	done := make(chan advResult, 1)
	go func() { done <- c.awaitConnEnd() }()
	_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block[:1]})
	var frames bytes.Buffer
	w := http2.NewFramer(&frames, nil)
	for range 200000 {
		_ = w.WriteContinuation(1, false, nil)
	}
	_ = w.WriteContinuation(1, true, block[1:])
	_ = c.nc.SetWriteDeadline(time.Now().Add(advWait))
	_, _ = c.nc.Write(frames.Bytes())
	if r := <-done; !r.goAway && !r.closed {
		t.Errorf("got %v, want the connection's end", r)
	}
	if served.Load() != 0 {
		t.Errorf("a header block of 200,001 CONTINUATION frames (%d KiB) was served", frames.Len()>>10)
	}
}

// TestContinuationSizeUpdates (CVE-2023-45288): HPACK instructions that
// emit no field (dynamic table size updates) count toward a header
// block's bound: the connection ends long before 64 MiB of them.
func TestContinuationSizeUpdates(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{MaxHeaderBytes: 16 << 10}, okHandler)
	c := s.dial(t)
	done := make(chan advResult, 1)
	go func() { done <- c.awaitConnEnd() }()
	_ = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: []byte{0x20}})
	frag := bytes.Repeat([]byte{0x20}, 16<<10) // "dynamic table size 0", 16384 times
	var sent int64
	for sent < 64<<20 {
		_ = c.nc.SetWriteDeadline(time.Now().Add(2 * time.Second))
		if c.fr.WriteContinuation(1, false, frag) != nil {
			break
		}
		sent += int64(len(frag))
	}
	if r := <-done; !r.goAway && !r.closed {
		t.Errorf("got %v, want the connection's end", r)
	}
	if sent >= 64<<20 {
		t.Errorf("the server read %d MiB of one header block (MaxHeaderBytes 16 KiB)", sent>>20)
	}
}

// TestNonblockingFlushWaits: a writer that holds the write lock before it
// waits on the socket (here, framing a large response head, then writing
// it to a client that does not read) never makes a non-blocking Flush of
// another stream wait for its write (writeTimeout, 30s).
func TestNonblockingFlushWaits(t *testing.T) {
	noLeaks(t)
	streams := make(chan *h2.Stream, 1)
	big := make(chan struct{})
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/big-head" {
			close(big)
			for i := range 200000 {
				w.Header()[fmt.Sprintf("X-H%d", i)] = []string{"v"}
			}
			w.(http.Flusher).Flush()
			return
		}
		st, err := w.(h2.Detacher).Detach(func() {})
		if err != nil {
			t.Error(err)
			return
		}
		streams <- st
	}))
	c := s.dialOpen(t)
	c.headers(1, true, advGet("/watch")...)
	st := <-streams
	if err := st.Send([][]byte{make([]byte, 32<<20)}, true); err != nil || !st.Stalled() {
		t.Fatalf("Send: %v, stalled %v", err, st.Stalled())
	}
	c.headers(3, true, advGet("/big-head")...)
	<-big
	var worst time.Duration
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		done := make(chan struct{})
		start := time.Now()
		go func() { _ = st.Flush(true); close(done) }()
		select {
		case <-done:
			worst = max(worst, time.Since(start))
		case <-time.After(2 * time.Second):
			t.Fatalf("a non-blocking Flush has waited 2s on another stream's blocking write")
		}
	}
	t.Logf("the longest non-blocking Flush took %v", worst)
}

// doneAfter answers "done" once release is closed.
func doneAfter(release <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = io.WriteString(w, "done")
	})
}

// TestClientGoAwayKeepsStreams: a client's GOAWAY(NO_ERROR) says it opens
// no more streams: its stream in flight runs to its end, past
// ShutdownGrace, and then the connection ends.
func TestClientGoAwayKeepsStreams(t *testing.T) {
	noLeaks(t)
	release := make(chan struct{})
	srv := &h2.Server{ShutdownGrace: 200 * time.Millisecond}
	c := startAdv(t, srv, doneAfter(release)).dial(t)
	c.headers(1, true, advGet("/")...)
	_ = c.fr.WriteGoAway(0, http2.ErrCodeNo, nil)
	time.AfterFunc(4*srv.ShutdownGrace, func() { close(release) }) // the stream outlives the grace
	var body []byte
	sawGoAway := false
	for {
		f, err := c.next()
		if err != nil {
			t.Fatalf("the stream in flight when the client sent GOAWAY: %v after %q", err, body)
		}
		switch f := f.(type) {
		case *http2.GoAwayFrame:
			sawGoAway = true
		case *http2.DataFrame:
			body = append(body, f.Data()...)
		}
		if f.Header().StreamID == 1 && f.Header().Flags.Has(http2.FlagDataEndStream) {
			break
		}
	}
	if string(body) != "done" || !sawGoAway {
		t.Errorf("body %q, GOAWAY %v; want \"done\" and the server's GOAWAY", body, sawGoAway)
	}
	readToEnd(t, c) // the connection ends with its last stream
}

// TestNoSettingsTimeout: a connection that sends the preface and no
// SETTINGS is closed within a few seconds (net/http's: 2s), not kept for
// ReadIdleTimeout + PingTimeout.
func TestNoSettingsTimeout(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, okHandler)
	nc, err := net.Dial("tcp", s.ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_ = nc.SetReadDeadline(time.Now().Add(advWait))
	_, err = io.Copy(io.Discard, nc) // our SETTINGS, then the end
	if d := time.Since(start); d >= 5*time.Second {
		t.Errorf("a connection without SETTINGS still open after %v (%v)", d.Round(time.Second), err)
	}
}

// TestPrefaceTimeout: over TLS, a connection that sends no preface is
// kept 10 s (x/net's prefaceTimeout; before, PingTimeout's 15 s), then
// closed.
func TestPrefaceTimeout(t *testing.T) {
	noLeaks(t)
	nc, err := tls.Dial("tcp", startTLSListener(t, &h2.Server{}, okHandler), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	start := time.Now()
	_ = nc.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = io.Copy(io.Discard, nc)
	switch d := time.Since(start); {
	case d < 9*time.Second:
		t.Errorf("closed after %v (%v), before the preface timeout", d.Round(time.Millisecond), err)
	case d > 12*time.Second:
		t.Errorf("still open after %v (%v)", d.Round(time.Millisecond), err)
	}
}

// TestRefusedAfterEnd: a stream both sides have ended no longer counts
// against MaxConcurrentStreams, though its handler's goroutine may not
// have returned yet: a client that opens its next stream as soon as it
// sees the last one's end is never refused.
func TestRefusedAfterEnd(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{MaxConcurrentStreams: 1}, okHandler)
	c := s.dial(t)
	refused := 0
	for id := uint32(1); id < 2*2000; id += 2 {
		c.headers(id, true, advGet("/")...)
		r := c.await(id)
		switch {
		case r.reset && r.code == http2.ErrCodeRefusedStream:
			refused++
		case r.status != "200":
			t.Fatalf("stream %d: %v", id, r)
		}
	}
	if refused > 0 {
		t.Errorf("%d of 2000 sequential requests refused with MaxConcurrentStreams 1", refused)
	}
}

// TestIdleTimeout: a connection with a stream open outlives IdleTimeout;
// IdleTimeout after its last stream's end it gets GOAWAY(NO_ERROR) and
// ends.
func TestIdleTimeout(t *testing.T) {
	noLeaks(t)
	release := make(chan struct{})
	srv := &h2.Server{IdleTimeout: 300 * time.Millisecond}
	c := startAdv(t, srv, doneAfter(release)).dial(t)
	c.headers(1, true, advGet("/")...)
	// Nothing but the handshake's frames for 3 idle timeouts.
	_ = c.nc.SetReadDeadline(time.Now().Add(3 * srv.IdleTimeout))
	for {
		f, err := c.fr.ReadFrame()
		if err != nil {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatalf("the connection with a stream open: %v", err)
			}
			break
		}
		if _, ok := f.(*http2.GoAwayFrame); ok {
			t.Fatal("GOAWAY with a stream open")
		}
	}
	close(release)
	if r := c.await(1); string(r.body) != "done" || !r.ended {
		t.Fatalf("stream 1: %v", r)
	}
	ended := time.Now()
	if r := c.awaitConnEnd(); !r.goAway || r.code != http2.ErrCodeNo {
		t.Fatalf("after the idle timeout: %v, want GOAWAY NO_ERROR", r)
	}
	if d := time.Since(ended); d < srv.IdleTimeout/2 || d > srv.IdleTimeout+2*time.Second {
		t.Errorf("GOAWAY %v after the last stream's end, IdleTimeout %v", d, srv.IdleTimeout)
	}
	readToEnd(t, c)
}
