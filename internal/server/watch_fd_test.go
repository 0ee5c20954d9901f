package server

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
	"github.com/listwatch/listwatch/storage/memory"
)

// fdWatch is a watch a client holds open on one transport.
type fdWatch struct {
	body  io.Reader
	conn  net.Conn // nil over HTTP/2, whose request has a deadline
	close func()
}

// fdTransport serves a Server and opens watches on it over one transport.
type fdTransport struct {
	name  string
	serve func(t *testing.T, s *Server) *httptest.Server
	open  func(t *testing.T, ts *httptest.Server, path string) fdWatch
	conns int // connections n watches hold: n, or 1 over HTTP/2
}

// fdChunked opens an HTTP/1.1 watch on its own connection (TLS if ts is).
func fdChunked(t *testing.T, ts *httptest.Server, path string) fdWatch {
	conn := dialRaw(t, ts)
	c := streamtest.OpenWatch(t, conn, path)
	return fdWatch{body: c.R, conn: conn, close: func() { conn.Close() }}
}

// fdWebSocket opens a WebSocket watch on its own connection.
func fdWebSocket(t *testing.T, ts *httptest.Server, path string) fdWatch {
	conn := dialRaw(t, ts)
	ws := streamtest.DialWS(t, conn, path)
	return fdWatch{body: ws.BR, conn: conn, close: func() { conn.Close() }}
}

// fdH2 opens an HTTP/2 watch, a stream of the client's one connection.
func fdH2(t *testing.T, ts *httptest.Server, path string) fdWatch {
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	req, err := http.NewRequestWithContext(ctx, "GET", ts.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := ts.Client().Do(req)
	if err != nil || resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK {
		t.Fatalf("an HTTP/2 watch: %v %v", resp, err)
	}
	return fdWatch{body: resp.Body, close: func() { cancel(); resp.Body.Close(); ts.Client().CloseIdleConnections() }}
}

var fdTransports = []fdTransport{
	{"cleartext lanes", func(t *testing.T, s *Server) *httptest.Server {
		ts := serveHTTP(s.Handler())
		t.Cleanup(func() { s.Close(); ts.Close() })
		return ts
	}, fdChunked, fdWatches},
	{"TLS HTTP/1.1", func(t *testing.T, s *Server) *httptest.Server { return serveTLS(t, s, false) }, fdChunked, fdWatches},
	{"TLS HTTP/2", func(t *testing.T, s *Server) *httptest.Server { return serveTLS(t, s, true) }, fdH2, 1},
	{"TLS WebSocket", func(t *testing.T, s *Server) *httptest.Server { return serveTLS(t, s, false) }, fdWebSocket, fdWatches},
}

// fdWatches is how many watches each round opens.
const fdWatches = 8

// TestWatchDescriptorsReleased: the descriptors of watches, the
// duplicates lanes and TLS watches write through included, are closed
// when the watches end by the client's close, the server's timeout and
// the server's shutdown, over every transport: the process holds as many
// as before them.
func TestWatchDescriptorsReleased(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts descriptors in /proc/self/fd, which only Linux has")
	}
	const n = fdWatches
	for _, tr := range fdTransports {
		t.Run(tr.name, func(t *testing.T) {
			store := memory.New()
			defer store.Close()
			s, err := New(t.Context(), Config{Storage: store})
			if err != nil {
				t.Fatal(err)
			}
			before := openFDs(t)
			ts := tr.serve(t, s)
			round := func(query string, end func(ws []fdWatch)) {
				t.Helper()
				from := createConfigMap(t, ts)
				ws := make([]fdWatch, n)
				for i := range ws {
					ws[i] = tr.open(t, ts, fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%s%s", from, query))
				}
				testwait.Until(t, 10*time.Second, "the watches detached", func() bool { return s.streams.Watches() == n })
				for range 3 { // the first reaches a watch level with the cache; the next ones, its lane
					createConfigMap(t, ts)
					for _, w := range ws {
						readUntil(t, w, `"type":"ADDED"`)
					}
				}
				if got := openFDs(t); got < before+2*tr.conns { // each connection's two ends
					t.Fatalf("%d descriptors with %d watches open, %d before the server: the count misses them", got, n, before)
				}
				end(ws)
				testwait.Until(t, 10*time.Second, "the streaming engine idle", func() bool {
					return s.streams.Watches() == 0 && s.streams.Goroutines() <= senders()
				})
			}
			round("", func(ws []fdWatch) { // warm: the client's and senders' first use
				closeAll(ws)
			})
			base := openFDs(t)
			round("", closeAll)
			awaitFDs(t, "after the clients closed their watches", base)
			round("&timeoutSeconds=1", func(ws []fdWatch) {
				for _, w := range ws {
					readToEnd(t, w)
				}
				closeAll(ws)
			})
			awaitFDs(t, "after the watches timed out", base)
			round("", func(ws []fdWatch) {
				s.Close()
				for _, w := range ws {
					readToEnd(t, w)
				}
				closeAll(ws)
				ts.Close()
			})
			awaitFDs(t, "after the server shut down", before)
		})
	}
}

// createConfigMap creates a ConfigMap and returns its resourceVersion.
func createConfigMap(t *testing.T, ts *httptest.Server) string {
	t.Helper()
	code, obj := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"generateName":"fd-"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	return obj.ResourceVersion()
}

func closeAll(ws []fdWatch) {
	for _, w := range ws {
		w.close()
	}
}

// readUntil reads w until it has read s.
func readUntil(t *testing.T, w fdWatch, s string) {
	t.Helper()
	if w.conn != nil {
		_ = w.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	br := bufio.NewReader(w.body)
	var seen []byte
	for !bytes.Contains(seen, []byte(s)) {
		b, err := br.ReadByte()
		if err != nil {
			t.Fatalf("reading a watch for %s: %v after %q", s, err, seen)
		}
		seen = append(seen, b)
	}
}

// readToEnd reads w to the stream's end, which the server makes: an EOF
// or a reset, not a deadline.
func readToEnd(t *testing.T, w fdWatch) {
	t.Helper()
	if w.conn != nil {
		_ = w.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	}
	_, err := io.Copy(io.Discard, w.body)
	if ne := net.Error(nil); errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("the server did not end the watch: %v", err)
	}
}

// openFDs is how many descriptors the process holds.
func openFDs(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// awaitFDs waits until the process holds no more than want descriptors:
// the kernel closes a socket once its last descriptor is closed, which a
// watch's end does after its goroutines are gone.
func awaitFDs(t *testing.T, when string, want int) {
	t.Helper()
	testwait.UntilNil(t, 10*time.Second, "descriptors released "+when, func() error {
		if got := openFDs(t); got > want {
			return fmt.Errorf("%d descriptors, want at most %d", got, want)
		}
		return nil
	})
}
