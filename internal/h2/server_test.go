package h2_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/h2"
)

// testServer serves h over HTTP/1.1 and h2c, or HTTP/1.1 and h2 over TLS,
// with an h2.Server; its client speaks HTTP/2 only.
type testServer struct {
	*httptest.Server
	h2     *h2.Server
	client *http.Client
}

func newTestServer(t testing.TB, tls bool, h http.Handler) *testServer {
	t.Helper()
	ts := httptest.NewUnstartedServer(h)
	srv := &h2.Server{}
	ts.Config.Protocols = new(http.Protocols)
	ts.Config.Protocols.SetHTTP1(true)
	ts.Config.Protocols.SetHTTP2(true)
	ts.Config.Protocols.SetUnencryptedHTTP2(true)
	srv.Configure(ts.Config)
	p := new(http.Protocols)
	if tls {
		ts.EnableHTTP2 = true
		ts.StartTLS()
		p.SetHTTP2(true)
	} else {
		ts.Start()
		p.SetUnencryptedHTTP2(true)
	}
	tr := &http.Transport{Protocols: p}
	if tls {
		tr.TLSClientConfig = ts.Client().Transport.(*http.Transport).TLSClientConfig
	}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		ts.Close()
	})
	return &testServer{Server: ts, h2: srv, client: &http.Client{Transport: tr}}
}

// echo answers with what it read, the request's protocol and whether it
// came over TLS.
func echo(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("X-Proto", r.Proto)
	w.Header().Set("X-TLS", fmt.Sprint(r.TLS != nil))
	w.Header().Set("X-Remote", r.RemoteAddr)
	w.Header().Set("X-Method", r.Method)
	w.Header().Set("X-Length", fmt.Sprint(r.ContentLength))
	_, _ = w.Write(body)
}

func TestMethodsAndBodies(t *testing.T) {
	for _, tls := range []bool{false, true} {
		ts := newTestServer(t, tls, http.HandlerFunc(echo))
		for _, method := range []string{"GET", "POST", "PUT"} {
			for _, size := range []int{0, 10, 100 << 10, 3 << 20} {
				t.Run(fmt.Sprintf("tls=%v/%s/%d", tls, method, size), func(t *testing.T) {
					want := bytes.Repeat([]byte("0123456789abcdef"), size/16+1)[:size]
					req, _ := http.NewRequestWithContext(t.Context(), method, ts.URL+"/x?y=1", bytes.NewReader(want))
					resp, err := ts.client.Do(req)
					if err != nil {
						t.Fatal(err)
					}
					defer resp.Body.Close()
					got, err := io.ReadAll(resp.Body)
					if err != nil {
						t.Fatal(err)
					}
					if sha256.Sum256(got) != sha256.Sum256(want) {
						t.Errorf("body: %d bytes back, sent %d", len(got), len(want))
					}
					h := resp.Header
					if resp.ProtoMajor != 2 || h.Get("X-Proto") != "HTTP/2.0" || h.Get("X-TLS") != fmt.Sprint(tls) || h.Get("X-Remote") == "" || h.Get("X-Method") != method {
						t.Errorf("response %s, headers %v", resp.Proto, h)
					}
				})
			}
		}
	}
}

func TestConcurrentStreams(t *testing.T) {
	ts := newTestServer(t, false, http.HandlerFunc(echo))
	var wg sync.WaitGroup
	errs := make(chan error, 200)
	for i := range 200 {
		wg.Go(func() {
			body := strings.Repeat(fmt.Sprint(i), 1000+i*100)
			resp, err := ts.client.Post(ts.URL, "text/plain", strings.NewReader(body))
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err == nil && string(got) != body {
				err = fmt.Errorf("request %d: %d bytes back, sent %d", i, len(got), len(body))
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestClientCancel cancels a streamed response mid-way: the handler's
// context ends.
func TestClientCancel(t *testing.T) {
	ended := make(chan error, 1)
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := bytes.Repeat([]byte("x"), 1000)
		for {
			if _, err := w.Write(chunk); err != nil {
				ended <- err
				return
			}
			w.(http.Flusher).Flush()
			if r.Context().Err() != nil {
				ended <- r.Context().Err()
				return
			}
		}
	}))
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
	resp, err := ts.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(resp.Body, make([]byte, 10000)); err != nil {
		t.Fatal(err)
	}
	cancel()
	resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler did not see the client's reset")
	}
}

// TestShutdown: http.Server.Shutdown lets an in-flight request finish.
func TestShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		_, _ = io.WriteString(w, "done")
	}))
	result := make(chan error, 1)
	go func() {
		resp, err := ts.client.Get(ts.URL)
		if err == nil {
			var b []byte
			b, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil && string(b) != "done" {
				err = fmt.Errorf("body %q", b)
			}
		}
		result <- err
	}()
	<-started
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- ts.Config.Shutdown(ctx)
	}()
	close(release)
	if err := <-result; err != nil {
		t.Errorf("in-flight request: %v", err)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}

// TestDetach streams from outside the handler after it returned, and
// tells the owner when the client resets the stream.
func TestDetach(t *testing.T) {
	streams := make(chan *h2.Stream, 1)
	gone := make(chan struct{})
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		st, err := w.(h2.Detacher).Detach(func() { close(gone) })
		if err != nil {
			t.Error(err)
			return
		}
		streams <- st
	}))
	t.Run("close", func(t *testing.T) {
		resp, err := ts.client.Get(ts.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		st := <-streams
		big := bytes.Repeat([]byte("y"), 1<<20)
		if err := st.Send([][]byte{[]byte("hello "), big, []byte("world")}, true); err != nil {
			t.Fatal(err)
		}
		if st.Stalled() {
			if err := st.Flush(false); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Close(); err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if want := "hello " + string(big) + "world"; string(b) != want {
			t.Errorf("got %d bytes, want %d", len(b), len(want))
		}
	})
	t.Run("client reset", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL, nil)
		resp, err := ts.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		st := <-streams
		cancel()
		resp.Body.Close()
		select {
		case <-gone:
		case <-time.After(10 * time.Second):
			t.Fatal("gone not called")
		}
		if err := st.Send([][]byte{[]byte("late")}, false); !errors.Is(err, h2.ErrStreamClosed) {
			t.Errorf("Send after the reset: %v", err)
		}
	})
}

// TestResponseControllerFlush: http.ResponseController's Flush sends what
// was written at once, before the handler returns.
func TestResponseControllerFlush(t *testing.T) {
	read := make(chan struct{})
	ts := newTestServer(t, false, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, "first")
		if err := http.NewResponseController(w).Flush(); err != nil {
			t.Error(err)
		}
		<-read // the client has the first part while the handler still runs
		_, _ = io.WriteString(w, " second")
	}))
	resp, err := ts.client.Get(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, len("first"))
	if _, err := io.ReadFull(resp.Body, first); err != nil || string(first) != "first" {
		t.Fatalf("read %q, %v", first, err)
	}
	close(read)
	if rest, err := io.ReadAll(resp.Body); err != nil || string(rest) != " second" {
		t.Errorf("then %q, %v", rest, err)
	}
}
