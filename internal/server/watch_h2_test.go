package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/listwatch/listwatch/internal/h2"
	"github.com/listwatch/listwatch/storage/memory"
)

// serveHTTP serves h over HTTP/1.1 and h2c, with internal/h2, as
// listwatch serve does.
func serveHTTP(h http.Handler) *httptest.Server {
	ts := httptest.NewUnstartedServer(h)
	ts.Config.Protocols = new(http.Protocols)
	ts.Config.Protocols.SetHTTP1(true)
	ts.Config.Protocols.SetUnencryptedHTTP2(true)
	(&h2.Server{}).Configure(ts.Config)
	ts.Start()
	return ts
}

// newH2Server serves s over HTTP/1.1 and h2c with internal/h2, as
// listwatch serve does, logging requests to logged.
func newH2Server(t *testing.T, logged chan<- slog.Record) (*httptest.Server, *Server, *http.Client) {
	t.Helper()
	store := memory.New()
	s, err := New(t.Context(), Config{Storage: store, Logger: slog.New(recordHandler(logged))})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(s.Handler())
	tr := &http.Transport{Protocols: unencryptedHTTP2()}
	t.Cleanup(func() { tr.CloseIdleConnections(); s.Close(); ts.Close(); store.Close() })
	return ts, s, &http.Client{Transport: tr}
}

// TestWatchH2ResetEndsWatch: a client resetting its detached HTTP/2 watch
// (its request's context cancelled) ends it on the server, which logs it.
func TestWatchH2ResetEndsWatch(t *testing.T) {
	logged := make(chan slog.Record, 16)
	ts, s, client := newH2Server(t, logged)
	ctx, cancel := context.WithCancel(t.Context())
	req, _ := http.NewRequestWithContext(ctx, "GET", ts.URL+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ProtoMajor != 2 {
		t.Fatalf("watch over %s", resp.Proto)
	}
	cancel()
	resp.Body.Close()
	waitLogged(t, logged, "watch")
	if n := s.streams.Watches(); n != 0 {
		t.Errorf("%d watches still detached after the client's reset", n)
	}
}

// TestWatchH2EndsAtShutdown: Server.Close ends a detached HTTP/2 watch
// cleanly (END_STREAM, not a reset).
func TestWatchH2EndsAtShutdown(t *testing.T) {
	ts, s, client := newH2Server(t, make(chan slog.Record, 16))
	resp, err := client.Get(ts.URL + "/api/v1/namespaces/default/configmaps?watch=true")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	s.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil && !errors.Is(err, io.EOF) {
		t.Errorf("the watch ended with %v, want its clean end", err)
	}
}
