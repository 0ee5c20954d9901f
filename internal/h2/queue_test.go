package h2_test

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"

	"golang.org/x/net/http2"

	"github.com/listwatch/listwatch/internal/h2"
)

// gatedConn is a server connection without a descriptor (as a TLS one
// is: its writes go through the connection's write queue) whose writes
// the test can hold at a gate, count, or fail.
type gatedConn struct {
	net.Conn
	entered chan struct{} // receives when a Write stops at the gate

	mu sync.Mutex
	// guarded by mu:
	gate   chan struct{} // non-nil: the next Write waits until it is closed
	writes int
	err    error // every Write fails with it once set
}

func (g *gatedConn) Write(b []byte) (int, error) {
	g.mu.Lock()
	g.writes++
	gate, err := g.gate, g.err
	g.gate = nil
	g.mu.Unlock()
	if err != nil {
		return 0, err
	}
	if gate != nil {
		g.entered <- struct{}{}
		<-gate
	}
	return g.Conn.Write(b)
}

// hold makes the next Write wait at a gate; the returned func opens it
// (once, however often it is called).
func (g *gatedConn) hold() (open func()) {
	gate := make(chan struct{})
	g.mu.Lock()
	g.gate = gate
	g.mu.Unlock()
	return sync.OnceFunc(func() { close(gate) })
}

func (g *gatedConn) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.writes
}

func (g *gatedConn) fail(err error) {
	g.mu.Lock()
	g.err = err
	g.mu.Unlock()
}

// startGated serves h with srv on gatedConns; it returns a client with
// the largest windows and the server's side of its connection.
func startGated(t *testing.T, srv *h2.Server, h http.Handler) (*advClient, *gatedConn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan *gatedConn, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		nc, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		g := &gatedConn{Conn: nc, entered: make(chan struct{})}
		accepted <- g
		srv.ServeConn(g, h2.ConnOptions{Handler: h})
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	c := newAdvClient(t, nc, http2.Setting{ID: http2.SettingInitialWindowSize, Val: 1<<31 - 1})
	if err := c.fr.WriteWindowUpdate(0, 1<<31-1-65535); err != nil {
		t.Fatal(err)
	}
	g := <-accepted
	if g == nil {
		t.Fatal("no connection accepted")
	}
	t.Cleanup(func() { g.Close() })
	return c, g
}

// startDetached starts a gated server and opens n detached streams on it
// (ids 1, 3, ...), reading their response heads, so that nothing the
// server wrote is left unread; gone is the streams' Detach callback.
func startDetached(t *testing.T, n int, gone func()) (*advClient, *gatedConn, []*h2.Stream) {
	t.Helper()
	streams := make(chan *h2.Stream, n)
	c, g := startGated(t, &h2.Server{}, detacher(t, streams, gone))
	sts := make([]*h2.Stream, n)
	for i := range n {
		c.headers(uint32(2*i+1), true, advGet(fmt.Sprintf("/w%d", i))...)
		sts[i] = <-streams
	}
	for heads := 0; heads < n; {
		f, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := f.(*http2.MetaHeadersFrame); ok {
			heads++
		}
	}
	return c, g, sts
}

// sendHeld holds the connection's next write at its gate, sends p on st
// without waiting and waits for the flusher to stop at the gate; open
// opens it (the test's cleanup too).
func sendHeld(t *testing.T, g *gatedConn, st *h2.Stream, p []byte) (open func()) {
	t.Helper()
	open = g.hold()
	t.Cleanup(open)
	if err := st.Send([][]byte{p}, true); err != nil {
		t.Fatal(err)
	}
	<-g.entered // the flusher waits on the "socket"
	return open
}

// TestQueueGathersSends: on a connection without a descriptor (TLS),
// a non-blocking Send never waits on the socket: while the flusher's
// write is held, the sends of seven other streams are queued, none
// stalled, and go out in one write once it returns, in the order they
// were sent. (Before the write queue, such a connection's non-blocking
// sends all stalled, and over TLS each was a tls.Conn.Write of its own.)
func TestQueueGathersSends(t *testing.T) {
	noLeaks(t)
	c, g, sts := startDetached(t, 8, func() {})
	open := sendHeld(t, g, sts[0], []byte("event-0"))
	for i, st := range sts {
		if i > 0 {
			if err := st.Send([][]byte{[]byte("event-"), {byte('0' + i)}}, true); err != nil {
				t.Fatal(err)
			}
		}
		if st.Stalled() {
			t.Fatalf("stream %d stalled while the socket was held", 2*i+1)
		}
	}
	held := g.count()
	open()
	var order []uint32
	for len(order) < len(sts) {
		f, err := c.next()
		if err != nil {
			t.Fatal(err)
		}
		if d, ok := f.(*http2.DataFrame); ok {
			if want := fmt.Sprintf("event-%d", d.StreamID/2); string(d.Data()) != want {
				t.Errorf("stream %d: %q, want %q", d.StreamID, d.Data(), want)
			}
			order = append(order, d.StreamID)
		}
	}
	if want := []uint32{1, 3, 5, 7, 9, 11, 13, 15}; !slices.Equal(order, want) {
		t.Errorf("DATA frames of streams %v, want %v (the order of the sends)", order, want)
	}
	if n := g.count() - held; n != 1 {
		t.Errorf("the seven sends queued behind the held write took %d writes, want 1", n)
	}
	for _, st := range sts {
		if err := st.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestQueueFullStalls: a queue holding its bound unwritten stalls
// non-blocking sends, the rest staying in the caller's pieces; their
// owners' Flush(false) writes them once the socket takes bytes again,
// every byte in order.
func TestQueueFullStalls(t *testing.T) {
	noLeaks(t)
	c, g, sts := startDetached(t, 2, func() {})
	big := make([]byte, 6<<20) // more than the queue's bound
	for i := range big {
		big[i] = byte(i / 1000)
	}
	open := sendHeld(t, g, sts[0], big)
	if !sts[0].Stalled() {
		t.Fatal("6 MiB were queued whole while the socket was held")
	}
	if err := sts[1].Send([][]byte{[]byte("small")}, true); err != nil {
		t.Fatal(err)
	}
	if !sts[1].Stalled() {
		t.Fatal("a send was queued past the bound")
	}
	owners := make(chan error, 2)
	for _, st := range sts {
		go func() { owners <- errors.Join(st.Flush(false), st.Close()) }()
	}
	open()
	rs := c.awaitAll(1, 3)
	for range sts {
		if err := <-owners; err != nil {
			t.Error(err)
		}
	}
	if !bytes.Equal(rs[1].body, big) || !rs[1].ended {
		t.Errorf("stream 1: %d bytes (ended %v), want the %d sent", len(rs[1].body), rs[1].ended, len(big))
	}
	if string(rs[3].body) != "small" || !rs[3].ended {
		t.Errorf("stream 3: %q (ended %v), want \"small\"", rs[3].body, rs[3].ended)
	}
}

// TestQueueWriteError: the flusher's write error ends the connection (its
// detached streams are told) and fails the writes after it.
func TestQueueWriteError(t *testing.T) {
	noLeaks(t)
	gone := make(chan struct{})
	_, g, sts := startDetached(t, 1, func() { close(gone) })
	st := sts[0]
	g.fail(errors.New("broken socket"))
	if err := st.Send([][]byte{[]byte("lost")}, true); err != nil {
		t.Fatal(err) // queued: the error comes after
	}
	<-gone
	if err := st.Send([][]byte{[]byte("after")}, false); err == nil {
		t.Error("a send after the connection's write error succeeded")
	}
}

// TestQueueWriteErrorFailsWaiters: a write waiting for room in a full
// queue is woken by the flusher's write error, and fails: 6 MiB more
// cannot go out on a connection whose writes fail.
func TestQueueWriteErrorFailsWaiters(t *testing.T) {
	noLeaks(t)
	_, g, sts := startDetached(t, 2, func() {})
	open := sendHeld(t, g, sts[0], make([]byte, 6<<20))
	if !sts[0].Stalled() {
		t.Fatal("6 MiB were queued whole while the socket was held")
	}
	errc := make(chan error, 1)
	go func() { errc <- sts[1].Send([][]byte{make([]byte, 6<<20)}, false) }()
	g.fail(errors.New("broken socket"))
	open()
	if err := <-errc; err == nil {
		t.Error("6 MiB were sent on a connection whose writes fail")
	}
}
