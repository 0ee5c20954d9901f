package server

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchDescriptorReuse: watches, in cleartext and over TLS, whose
// connections close while the senders (and lanes) write to them, with new
// connections opened at once, so that the system gives the new ones the
// closed ones' descriptors, are sent only their own events: each watch is
// of its own namespace, and every byte its client reads must be a
// well-formed chunk of events of that namespace, after a well-formed
// response head.
func TestWatchDescriptorReuse(t *testing.T) {
	const (
		namespaces = 8
		clients    = 16                 // watches open at once
		watches    = 400                // in all, at most
		runFor     = 3 * time.Second    // at most
		perWatch   = 4                  // events a client reads, at most, before it closes
		timeout    = "timeoutSeconds=1" // on every third watch: the server ends it
		readFor    = 20 * time.Second   // a client's deadline, so that a lost event fails
		pad        = 600                // bytes of data: a send of several events is several KiB
		cm         = `{"metadata":{"name":"c"},"data":{"i":%q,"pad":%q}}`
		cmsPath    = "/api/v1/namespaces/%s/configmaps"
		nsTemplate = `{"metadata":{"name":%q}}`
	)
	s, ts := newQuietServer(t, Config{})
	h := s.Handler()
	do := func(method, path, body string) int {
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", mediaJSON)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		return w.Code
	}
	ns := func(i int) string { return fmt.Sprint("reuse-", i%namespaces) }
	padding := strings.Repeat("x", pad)
	for i := range namespaces {
		if code := do(http.MethodPost, "/api/v1/namespaces", fmt.Sprintf(nsTemplate, ns(i))); code != http.StatusCreated {
			t.Fatalf("create namespace %s: %d", ns(i), code)
		}
		if code := do(http.MethodPost, fmt.Sprintf(cmsPath, ns(i)), fmt.Sprintf(cm, "0", padding)); code != http.StatusCreated {
			t.Fatalf("create a ConfigMap in %s: %d", ns(i), code)
		}
	}

	// Every other watch over TLS: a closed connection's descriptor may be
	// given to one of either kind.
	tlsServer := serveTLS(t, s, false)
	dials := []func() (net.Conn, error){
		func() (net.Conn, error) { return net.Dial("tcp", ts.Listener.Addr().String()) },
		func() (net.Conn, error) {
			return tls.Dial("tcp", tlsServer.Listener.Addr().String(), http1TLS(tlsServer))
		},
	}

	stop := make(chan struct{})
	var writes, watchers sync.WaitGroup
	writes.Go(func() { // the writes: each namespace's ConfigMap in turn
		for i := 1; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if code := do(http.MethodPut, fmt.Sprintf(cmsPath, ns(i))+"/c", fmt.Sprintf(cm, strconv.Itoa(i), padding)); code != http.StatusOK {
				t.Errorf("update in %s: %d", ns(i), code)
				return
			}
		}
	})
	var started, events atomic.Int64
	deadline := time.Now().Add(runFor)
	for c := range clients {
		watchers.Go(func() {
			for n := c; time.Now().Before(deadline) && started.Add(1) <= watches; n += clients {
				path := fmt.Sprintf(cmsPath, ns(n)) + "?watch=true"
				if n%3 == 0 {
					path += "&" + timeout
				}
				got, err := readOwnWatch(dials[n/clients%2], path, ns(n), 1+n%perWatch, time.Now().Add(readFor))
				events.Add(int64(got))
				if err != nil {
					t.Errorf("watch %d of namespace %s: %v", n, ns(n), err)
					return
				}
			}
		})
	}
	watchers.Wait()
	close(stop)
	writes.Wait()
	if events.Load() == 0 {
		t.Fatal("no watch was sent an event")
	}
	t.Logf("%d watches, %d events read", min(started.Load(), watches), events.Load())
}

// readOwnWatch opens a watch of path on a connection from dial and reads up to want of its
// events (or to its end), checking that the response head is a watch's
// and that each chunk is well formed and carries only events of
// namespace; it returns the events read.
func readOwnWatch(dial func() (net.Conn, error), path, namespace string, want int, deadline time.Time) (int, error) {
	conn, err := dial()
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	_ = conn.SetDeadline(deadline)
	fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: reuse\r\n\r\n", path)
	r := bufio.NewReader(conn)
	status, err := r.ReadString('\n')
	if err != nil || status != "HTTP/1.1 200 OK\r\n" {
		return 0, fmt.Errorf("the response's first line is %q (%v)", status, err)
	}
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return 0, fmt.Errorf("reading the head: %w", err)
		}
		if line == "\r\n" {
			break
		}
		if !strings.HasSuffix(line, "\r\n") || !strings.Contains(line, ": ") {
			return 0, fmt.Errorf("a malformed header line %q", line)
		}
	}
	got := 0
	for got < want {
		size, err := r.ReadString('\n')
		if err != nil {
			return got, fmt.Errorf("reading a chunk's size: %w", err)
		}
		n, err := strconv.ParseInt(strings.TrimSuffix(size, "\r\n"), 16, 64)
		if err != nil || !strings.HasSuffix(size, "\r\n") || n < 0 {
			return got, fmt.Errorf("a malformed chunk size line %q", size)
		}
		if n == 0 {
			return got, nil // the server ended the watch (its timeout)
		}
		body := make([]byte, n+2)
		if _, err := io.ReadFull(r, body); err != nil {
			return got, fmt.Errorf("reading a chunk of %d bytes: %w", n, err)
		}
		if !bytes.HasSuffix(body, []byte("\r\n")) {
			return got, fmt.Errorf("a chunk of %d bytes not followed by CRLF: %q", n, body)
		}
		for ev := range bytes.SplitSeq(bytes.TrimSuffix(body[:n], []byte("\n")), []byte("\n")) {
			var e struct {
				Type   string
				Object struct {
					Metadata struct{ Namespace string }
				}
			}
			if err := json.Unmarshal(ev, &e); err != nil {
				return got, fmt.Errorf("an event that is not JSON: %w: %q", err, ev)
			}
			if e.Object.Metadata.Namespace != namespace || e.Type != "ADDED" && e.Type != "MODIFIED" {
				return got, errors.New("an event of another watch: " + string(ev[:min(len(ev), 200)]))
			}
			got++
		}
	}
	return got, nil
}
