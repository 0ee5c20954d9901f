package server

import (
	"bufio"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream"
	"github.com/listwatch/listwatch/storage/memory"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// TestStalledReaderDoesNotDelayOthers opens a watch on a raw socket and
// stops reading it, so the kernel's buffers and the watcher's queue fill,
// while other watchers receive every event of a burst. When the stalled
// reader reads again it gets every event it missed, in order, with no 410,
// since the store's history still holds them. Over TLS too, where the
// server's writes go through tls.Conn.
func TestStalledReaderDoesNotDelayOthers(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", overTLS), func(t *testing.T) { testStalledReader(t, overTLS) })
	}
}

func testStalledReader(t *testing.T, overTLS bool) {
	store := memory.New()
	s, err := New(t.Context(), Config{Storage: store, WatchCache: watchcache.Config{WatcherBufferBytes: 16 << 10, RingMaxEvents: 256, RingMinEvents: 64}})
	if err != nil {
		t.Fatal(err)
	}
	ts := newSocketServer(t, s, overTLS)
	defer store.Close()
	start, _ := store.CurrentRevision(t.Context())
	url := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)

	stalled := rawWatch(t, ts, url)
	fast := []*stream{openWatch(t, ts.Client(), ts.URL+url), openWatch(t, ts.Client(), ts.URL+url)}

	const writes = 1000 // about 1 MiB, far more than the small socket buffers hold
	pad := strings.Repeat("x", 1024)
	history := make(storagetest.History, 0, writes)
	for i := range writes {
		code, o := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, fmt.Sprintf(`{"metadata":{"name":"s%d"},"data":{"pad":%q}}`, i, pad))
		if code != http.StatusCreated {
			t.Fatalf("create %d: %d", i, code)
		}
		history = append(history, event{api.Added, o}.record())
	}
	var wg sync.WaitGroup
	for i, f := range fast {
		wg.Go(func() {
			if err := storagetest.ValidateWatch(history, start, records(f.next(writes, false)), true); err != nil {
				t.Errorf("fast watcher %d while the other stalls: %v", i, err)
			}
		})
	}
	wg.Wait()
	got := stalled.next(t, writes)
	if err := storagetest.ValidateWatch(history, start, got, true); err != nil {
		t.Errorf("the stalled reader, reading again: %v", err)
	}
	if n := s.streams.Watches(); n != 3 {
		t.Errorf("%d watches detached, want all 3", n)
	}
}

// newSocketServer serves s on a real socket whose connections have small
// send buffers, so that a client that stops reading blocks the server's
// writes soon; over TLS (HTTP/1.1) as `listwatch serve` does, if overTLS.
// TestStalledWatchEndsAtItsTimeout checks that a watch whose client
// stopped reading, its own goroutine blocked in a write, still ends at its
// timeoutSeconds (the write bounded by watchstream.EndWriteGrace), not at the client's
// next read.
func TestStalledWatchEndsAtItsTimeout(t *testing.T) {
	store := memory.New()
	defer store.Close()
	s, err := New(t.Context(), Config{Storage: store, WatchCache: watchcache.Config{WatcherBufferBytes: 16 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	ts := newSocketServer(t, s, false)
	start, _ := store.CurrentRevision(t.Context())
	rawWatch(t, ts, fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d&timeoutSeconds=1", start))
	waitDetached(t, s, 1)
	pad := strings.Repeat("x", 1024)
	for i := range 300 { // about 300 KiB, far more than the small socket buffers hold
		if code, _ := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, fmt.Sprintf(`{"metadata":{"name":"t%d"},"data":{"pad":%q}}`, i, pad)); code != http.StatusCreated {
			t.Fatalf("create %d: %d", i, code)
		}
	}
	limit := time.Second + watchstream.EndWriteGrace + 5*time.Second // its timeout, the grace, a margin
	testwait.Until(t, limit, "the stalled watch to end after the writes", func() bool { return s.streams.Watches() == 0 })
}

func newSocketServer(t *testing.T, s *Server, overTLS bool) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Listener = smallBuffers{ts.Listener}
	if overTLS {
		ts.Listener = watchstream.Listener(ts.Listener)
		ts.Config.ConnContext = watchstream.ConnContext
		ts.StartTLS()
	} else {
		ts.Start()
	}
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts
}

// smallBuffers is a listener whose connections send through 16 KiB buffers.
type smallBuffers struct{ net.Listener }

func (l smallBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(16 << 10)
	}
	return c, err
}

// rawStream is a watch read from a raw TCP connection, at the test's pace.
type rawStream struct {
	conn  net.Conn
	lines *bufio.Reader
}

// rawWatch sends a watch request to ts on its own connection (over TLS if
// ts serves TLS) and reads nothing until next is called.
func rawWatch(t *testing.T, ts *httptest.Server, path string) *rawStream {
	t.Helper()
	conn, err := net.Dial("tcp", ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if tc, ok := conn.(*net.TCPConn); ok {
		_ = tc.SetReadBuffer(16 << 10)
	}
	if ts.TLS != nil {
		conn = tls.Client(conn, http1TLS(ts))
	}
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: test\r\n\r\n", path)
	return &rawStream{conn: conn, lines: bufio.NewReaderSize(conn, 1<<20)}
}

// next reads n events, decoding the chunked body by hand.
func (r *rawStream) next(t *testing.T, n int) []storagetest.Record {
	t.Helper()
	_ = r.conn.SetReadDeadline(time.Now().Add(60 * time.Second))
	resp, err := http.ReadResponse(r.lines, nil)
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(resp.Body)
	var out []storagetest.Record
	for len(out) < n {
		var raw api.WatchEvent
		if err := dec.Decode(&raw); err != nil {
			t.Fatalf("after %d events: %v", len(out), err)
		}
		obj, _ := api.ParseObject(raw.Object)
		if raw.Type == api.Error {
			t.Fatalf("ERROR event after %d events: %v", len(out), obj)
		}
		if raw.Type != api.Bookmark {
			out = append(out, event{raw.Type, obj}.record())
		}
	}
	return out
}
