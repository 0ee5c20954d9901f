package server

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/h2"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchstream"
	"github.com/listwatch/listwatch/storage/memory"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// newWatchServer starts a Server with short bookmark intervals on a real
// socket; it serves HTTP/1.1 and cleartext HTTP/2.
func newWatchServer(t *testing.T) (*httptest.Server, *Server, *memory.Store) {
	t.Helper()
	store := memory.New()
	s, err := New(t.Context(), Config{Storage: store, BookmarkInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	return ts, s, store
}

// event is one decoded watch event.
type event struct {
	Type   string
	Object api.Object
}

func (e event) record() storagetest.Record {
	rv := e.Object.ResourceVersion()
	var rev int64
	fmt.Sscan(rv, &rev)
	return storagetest.Record{Type: e.Type, Key: e.Object.Namespace() + "/" + e.Object.Name(), Revision: rev}
}

// stream is an open watch over HTTP.
type stream struct {
	t     *testing.T
	resp  *http.Response
	lines *bufio.Scanner
}

func openWatch(t *testing.T, client *http.Client, url string) *stream {
	t.Helper()
	resp := startWatch(t, client, url, "")
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 16<<20)
	return &stream{t: t, resp: resp, lines: sc}
}

// startWatch opens a watch (with an Accept header unless accept is empty),
// closed at cleanup, and fails unless it answers 200.
func startWatch(t *testing.T, client *http.Client, url, accept string) *http.Response {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("watch %s: %d %s", url, resp.StatusCode, b)
	}
	return resp
}

// next reads n events, skipping bookmarks unless keepBookmarks.
func (s *stream) next(n int, keepBookmarks bool) []event {
	s.t.Helper()
	var out []event
	for len(out) < n {
		if !s.lines.Scan() {
			s.t.Fatalf("stream ended after %d of %d events: %v", len(out), n, s.lines.Err())
		}
		var raw api.WatchEvent
		if err := json.Unmarshal(s.lines.Bytes(), &raw); err != nil {
			s.t.Fatalf("event %q: %v", s.lines.Text(), err)
		}
		obj, err := api.ParseObject(raw.Object)
		if err != nil {
			s.t.Fatal(err)
		}
		if raw.Type == api.Bookmark && !keepBookmarks {
			continue
		}
		out = append(out, event{raw.Type, obj})
	}
	return out
}

func records(evs []event) []storagetest.Record {
	out := make([]storagetest.Record, len(evs))
	for i, e := range evs {
		out[i] = e.record()
	}
	return out
}

// script makes a mixed history of writes through the API and returns it.
func script(t *testing.T, ts *httptest.Server) storagetest.History {
	t.Helper()
	return scriptNamed(t, ts, "c")
}

// scriptNamed is script with objects named prefix0, prefix1, prefix2.
func scriptNamed(t *testing.T, ts *httptest.Server, prefix string) storagetest.History {
	t.Helper()
	var h storagetest.History
	add := func(typ string, obj api.Object) {
		h = append(h, event{typ, obj}.record())
	}
	const cms = "/api/v1/namespaces/default/configmaps"
	var first api.Object
	for i := range 3 {
		code, o := call(t, ts, "POST", cms, mediaJSON, fmt.Sprintf(`{"metadata":{"name":"%s%d"},"data":{"i":"%d"}}`, prefix, i, i))
		if code != http.StatusCreated {
			t.Fatalf("create %s%d: %d %v", prefix, i, code, o)
		}
		add(api.Added, o)
		if i == 0 {
			first = o.DeepCopy()
		}
	}
	_, o := call(t, ts, "PATCH", cms+"/"+prefix+"1", "application/merge-patch+json", `{"data":{"i":"changed"}}`)
	add(api.Modified, o)
	if code, o := call(t, ts, "DELETE", cms+"/"+prefix+"0", "", ""); code != 200 {
		t.Fatalf("delete: %d %v", code, o)
	}
	// DELETED carries the last state, at the deletion's revision (the
	// answer is a Status).
	rev, _ := storageCurrent(t, ts)
	first.SetMeta("resourceVersion", fmt.Sprint(rev))
	add(api.Deleted, first)
	return h
}

func storageCurrent(t *testing.T, ts *httptest.Server) (int64, error) {
	_, list := call(t, ts, "GET", "/api/v1/namespaces?limit=1", "", "")
	var rev int64
	_, err := fmt.Sscan(list.Metadata()["resourceVersion"].(string), &rev)
	return rev, err
}

func TestWatchTransports(t *testing.T) {
	ts, s, _ := newWatchServer(t)
	tlsServer := serveTLS(t, s, true)
	start, _ := storageCurrent(t, ts)
	h2c := &http.Client{Transport: &http.Transport{Protocols: unencryptedHTTP2()}}
	path := fmt.Sprintf("/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=%d", start)
	h1 := openWatch(t, ts.Client(), ts.URL+path)
	h2 := openWatch(t, h2c, ts.URL+path)
	ws := openWebSocketWatch(t, ts.URL, ts.URL+path)
	tlsH1 := openWatch(t, http1Client(tlsServer), tlsServer.URL+path)
	tlsH2 := openWatch(t, tlsServer.Client(), tlsServer.URL+path)
	for name, st := range map[string]*stream{"HTTP/1.1": h1, "TLS HTTP/1.1": tlsH1} {
		if st.resp.ProtoMajor != 1 || st.resp.TransferEncoding[0] != "chunked" || st.resp.Header.Get("Content-Type") != mediaJSON {
			t.Errorf("%s watch: proto %s, transfer %v, type %s", name, st.resp.Proto, st.resp.TransferEncoding, st.resp.Header.Get("Content-Type"))
		}
	}
	if h2.resp.ProtoMajor != 2 || tlsH2.resp.ProtoMajor != 2 || tlsH2.resp.TLS == nil || tlsH1.resp.TLS == nil {
		t.Errorf("h2c watch served over %s, h2 over %s (TLS %v), TLS HTTP/1.1 TLS %v", h2.resp.Proto, tlsH2.resp.Proto, tlsH2.resp.TLS != nil, tlsH1.resp.TLS != nil)
	}
	history := script(t, ts)
	for name, got := range map[string][]event{
		"http/1.1": h1.next(len(history), false), "h2c": h2.next(len(history), false), "websocket": ws.next(len(history)),
		"TLS http/1.1": tlsH1.next(len(history), false), "h2": tlsH2.next(len(history), false),
	} {
		if err := storagetest.ValidateWatch(history, start, records(got), true); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if n := s.streams.Watches(); n != 5 {
		t.Errorf("%d watches detached, want all 5: over HTTP/1.1 and HTTP/2 (cleartext and TLS) and WebSocket", n)
	}
}

// serveTLS serves s over TLS too, as `listwatch serve` does: on a
// Listener, with ConnContext; HTTP/2 (internal/h2) by ALPN if http2.
func serveTLS(t *testing.T, s *Server, http2 bool) *httptest.Server {
	t.Helper()
	ts := httptest.NewUnstartedServer(s.Handler())
	ts.Listener = watchstream.Listener(ts.Listener)
	ts.Config.ConnContext = watchstream.ConnContext
	(&h2.Server{}).Configure(ts.Config)
	ts.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
	if http2 {
		ts.EnableHTTP2 = true
		ts.TLS.NextProtos = []string{"h2", "http/1.1"} // httptest's default with HTTP/2 is h2 alone
	}
	ts.StartTLS()
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts
}

// http1Client is ts's client (which trusts its certificate) speaking
// HTTP/1.1 alone.
func http1Client(ts *httptest.Server) *http.Client {
	return &http.Client{Transport: &http.Transport{TLSClientConfig: http1TLS(ts)}}
}

// http1TLS trusts ts's certificate and offers HTTP/1.1 alone by ALPN.
func http1TLS(ts *httptest.Server) *tls.Config {
	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	return &tls.Config{RootCAs: roots, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}}
}

// newQuietServer serves a Server of cfg on a memory store, without logs,
// over HTTP/1.1 and h2c.
func newQuietServer(tb testing.TB, cfg Config) (*Server, *httptest.Server) {
	tb.Helper()
	store := memory.New()
	cfg.Storage, cfg.Logger = store, slog.New(slog.DiscardHandler)
	s, err := New(tb.Context(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ts := serveHTTP(s.Handler())
	tb.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	return s, ts
}

func unencryptedHTTP2() *http.Protocols {
	p := new(http.Protocols)
	p.SetUnencryptedHTTP2(true)
	return p
}

// wsStream is a watch over WebSocket.
type wsStream struct {
	t    *testing.T
	conn *websocket.Conn
}

func openWebSocketWatch(t *testing.T, base, url string) *wsStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	conn, resp, err := websocket.Dial(ctx, strings.Replace(url, "http://", "ws://", 1), &websocket.DialOptions{Subprotocols: []string{"base64.binary.k8s.io"}})
	if err != nil {
		t.Fatalf("dial %s: %v", url, err)
	}
	if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "base64.binary.k8s.io" {
		t.Errorf("subprotocol %q not echoed", p)
	}
	t.Cleanup(func() { conn.CloseNow() })
	return &wsStream{t: t, conn: conn}
}

func (s *wsStream) next(n int) []event {
	var out []event
	for len(out) < n {
		typ, msg, err := s.conn.Read(s.t.Context())
		if err != nil {
			s.t.Fatalf("websocket read after %d events: %v", len(out), err)
		}
		if typ != websocket.MessageText {
			s.t.Fatalf("JSON event sent as a binary message")
		}
		var raw api.WatchEvent
		if err := json.Unmarshal(msg, &raw); err != nil {
			s.t.Fatal(err)
		}
		if raw.Type == api.Bookmark {
			continue
		}
		obj, _ := api.ParseObject(raw.Object)
		out = append(out, event{raw.Type, obj})
	}
	return out
}

func TestWatchResumeFromEveryRevision(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	start, _ := storageCurrent(t, ts)
	history := script(t, ts)
	for _, from := range append([]int64{start}, revisions(history)...) {
		s := openWatch(t, ts.Client(), ts.URL+fmt.Sprintf("/api/v1/configmaps?watch=1&resourceVersion=%d", from))
		tail := history.After(from)
		got := s.next(len(tail), false)
		if err := storagetest.ValidateWatch(history, from, records(got), true); err != nil {
			t.Errorf("from %d: %v", from, err)
		}
		s.resp.Body.Close()
	}
}

func revisions(h storagetest.History) []int64 {
	out := make([]int64, len(h))
	for i, r := range h {
		out[i] = r.Revision
	}
	return out
}

func TestWatchInitialStateAndBookmarks(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	history := script(t, ts) // c1 (modified) and c2 remain
	s := openWatch(t, ts.Client(), ts.URL+"/api/v1/namespaces/default/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
	got := s.next(3, true)
	if got[0].Type != api.Added || got[0].Object.Name() != "c1" || got[1].Object.Name() != "c2" {
		t.Fatalf("initial events: %v", got)
	}
	end := got[2]
	if end.Type != api.Bookmark || end.Object.Annotations()[api.InitialEventsEndAnnotation] != "true" || end.Object.Kind() != "ConfigMap" {
		t.Fatalf("after the initial events: %v, want the annotated bookmark", end)
	}
	last := history[len(history)-1].Revision
	if rv := end.Object.ResourceVersion(); rv != fmt.Sprint(last) {
		t.Errorf("initial-events-end bookmark at %s, want %d", rv, last)
	}
	// Idle: a periodic bookmark arrives (every 50 ms here).
	if b := s.next(1, true)[0]; b.Type != api.Bookmark || b.Object.Annotations() != nil {
		t.Errorf("idle watch got %v, want a plain bookmark", b)
	}
}

func TestWatchSelectorTransitionsAndNamePath(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"a","labels":{"app":"web"}}}`)
	call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"b","labels":{"app":"web"}}}`)
	sel := openWatch(t, ts.Client(), ts.URL+cms+"?watch=true&labelSelector=app%3Dweb")
	one := openWatch(t, ts.Client(), ts.URL+"/api/v1/watch/namespaces/default/configmaps/b")
	if got := sel.next(2, false); got[0].Object.Name() != "a" || got[1].Object.Name() != "b" {
		t.Fatalf("initial state of app=web: %v", got)
	}
	if got := one.next(1, false); got[0].Type != api.Added || got[0].Object.Name() != "b" {
		t.Fatalf("watch of one object by path: %v", got)
	}
	call(t, ts, "PATCH", cms+"/a", "application/merge-patch+json", `{"metadata":{"labels":{"app":"db"}}}`)
	call(t, ts, "PATCH", cms+"/a", "application/merge-patch+json", `{"metadata":{"labels":{"app":"web"}}}`)
	call(t, ts, "PATCH", cms+"/b", "application/merge-patch+json", `{"data":{"x":"1"}}`)
	got := sel.next(3, false)
	want := []string{api.Deleted + " a", api.Added + " a", api.Modified + " b"}
	for i, e := range got {
		if e.Type+" "+e.Object.Name() != want[i] {
			t.Fatalf("transitions: got %v, want %v", got, want)
		}
	}
	if got[0].Object.Labels()["app"] != "web" {
		t.Errorf("DELETED by transition carries %v, want the previous labels", got[0].Object.Labels())
	}
	if e := one.next(1, false)[0]; e.Type != api.Modified || e.Object.Name() != "b" {
		t.Errorf("single-object watch got %v", e)
	}
}

func TestWatchTooOldIsGone(t *testing.T) {
	ts, s, store := newWatchServer(t)
	_ = s
	history := script(t, ts)
	if err := store.Compact(context.Background(), history[3].Revision); err != nil {
		t.Fatal(err)
	}
	// Past the ring too: a cache whose ring was never filled for this position.
	st := openWatch(t, ts.Client(), ts.URL+fmt.Sprintf("/api/v1/configmaps?watch=true&resourceVersion=%d", history[0].Revision-1))
	for {
		e := st.next(1, false)[0]
		if e.Type != api.Error {
			continue // events the ring still held may come first
		}
		if e.Object["code"] != json.Number("410") || e.Object["reason"] != "Expired" {
			t.Fatalf("ERROR event %v, want 410 Expired", e.Object)
		}
		break
	}
	if st.lines.Scan() {
		t.Errorf("the stream went on after the ERROR event: %s", st.lines.Text())
	}
}

func TestWatchTimeoutAndShutdownEndCleanly(t *testing.T) {
	for _, overTLS := range []bool{false, true} {
		t.Run(fmt.Sprintf("tls=%v", overTLS), func(t *testing.T) {
			ts, s, _ := newWatchServer(t)
			client, base := ts.Client(), ts.URL
			if overTLS {
				tlsServer := serveTLS(t, s, false)
				client, base = tlsServer.Client(), tlsServer.URL
			}
			timed := openWatch(t, client, base+"/api/v1/configmaps?watch=true&timeoutSeconds=1&allowWatchBookmarks=true")
			for timed.lines.Scan() {
			}
			if err := timed.lines.Err(); err != nil {
				t.Errorf("timed-out watch ended with %v, want a clean end", err)
			}
			open := openWatch(t, client, base+"/api/v1/configmaps?watch=true")
			call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"c"}}`)
			open.next(1, false) // detached by then
			if n := s.streams.Watches(); n != 1 {
				t.Errorf("%d watches detached, want 1", n)
			}
			s.Close()
			for open.lines.Scan() {
			}
			if err := open.lines.Err(); err != nil {
				t.Errorf("watch at shutdown ended with %v, want a clean end", err)
			}
		})
	}
}

func TestWatchBadInput(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	for _, tt := range []struct {
		query string
		code  int
	}{
		{"watch=true&resourceVersion=x", 400},
		{"watch=true&resourceVersionMatch=NotOlderThan", 422},
		{"watch=true&sendInitialEvents=true", 422},
		{"watch=true&timeoutSeconds=-1", 400},
		{"watch=true&labelSelector=%3D%3D", 400},
	} {
		code, st := call(t, ts, "GET", "/api/v1/configmaps?"+tt.query, "", "")
		if code != tt.code || st["kind"] != "Status" {
			t.Errorf("%s: %d %v, want %d", tt.query, code, st, tt.code)
		}
	}
}

// TestWebSocketCloseEndsWatch checks that a WebSocket client closing its
// connection ends the watch on the server (whose request context a hijacked
// connection never cancels).
func TestWebSocketCloseEndsWatch(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	url := ts.URL + "/api/v1/namespaces/default/configmaps?watch=true"
	ws := openWebSocketWatch(t, ts.URL, url)
	waitWatchers := func(want string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			_, _, body := get(t, ts.Client(), "GET", ts.URL+"/metrics", nil)
			if strings.Contains(body, `apiserver_registered_watchers{group="",kind="ConfigMap",version="v1"} `+want) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("registered watchers never reached %s", want)
			}
			time.Sleep(10 * time.Millisecond) // polling a gauge; bounded by the deadline
		}
	}
	waitWatchers("1")
	ws.conn.Close(websocket.StatusNormalClosure, "bye")
	waitWatchers("0")
}

// TestWatchRacingDefinitionChange checks what a watch gets when its
// resource's definition changed after the request was prepared: what a
// request made now would get, as the watch is prepared again from the new
// definition (the new scope's 404 for a namespaced path, or the watch), and
// 404 naming the resource once it is no longer served.
func TestWatchRacingDefinitionChange(t *testing.T) {
	tests := []struct {
		name, method, body string
		code               int
		message            string
	}{
		{"redefined", "PATCH", `{"metadata":{"labels":{"edited":"yes"}}}`, http.StatusOK, ""},
		{"scope changed", "RECREATE", gadgetCRD, http.StatusNotFound, "the server could not find the requested resource"},
		{"deleted", "DELETE", "", http.StatusNotFound, "the server could not find the requested resource (watch gadgets.example.com)"},
	}
	namespaced := strings.Replace(gadgetCRD, `"scope":"Cluster"`, `"scope":"Namespaced"`, 1)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, ts := newCRDServer(t, newMemoryStore(t))
			do(t, ts, "POST", crdsPath, "", namespaced)
			var old *resource.Resource
			waitFor(t, s, func() bool { old, _ = s.catalog.Get("example.com", "v1", "gadgets"); return old != nil })
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			rec := startRecorder{httptest.NewRecorder(), cancel}
			r := httptest.NewRequestWithContext(ctx, "GET", "/apis/example.com/v1/namespaces/default/gadgets?watch=true", nil)
			info, _ := parseRequest(r)
			q, err := s.newRequest(rec, r, info)
			if err != nil {
				t.Fatal(err)
			}
			changeDefinition(t, ts, tt.method, tt.body)
			waitFor(t, s, func() bool {
				cur, _ := s.catalog.Get("example.com", "v1", "gadgets")
				return cur != old && (tt.method != "RECREATE" || cur != nil)
			})
			q.watch() // returns once the response starts: rec cancels the request
			if rec.Code != tt.code {
				t.Fatalf("watch: %d %s, want %d", rec.Code, rec.Body, tt.code)
			}
			if tt.code == http.StatusOK {
				return
			}
			var st api.Status
			if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || st.Message != tt.message {
				t.Errorf("watch: %s (%v), want the message %q", rec.Body, err, tt.message)
			}
		})
	}
}

// changeDefinition changes the gadgets definition by method, or, for
// "RECREATE", deletes it and creates body in its place (the one way to change
// the scope of an established definition).
func changeDefinition(t *testing.T, ts *httptest.Server, method, body string) {
	t.Helper()
	path := crdsPath + "/gadgets.example.com"
	if method == "RECREATE" {
		if r := do(t, ts, "DELETE", path, "", ""); r.code != http.StatusOK {
			t.Fatalf("delete definition: %d %v", r.code, r.obj)
		}
		if r := do(t, ts, "POST", crdsPath, "", body); r.code != http.StatusCreated {
			t.Fatalf("create definition: %d %v", r.code, r.obj)
		}
		return
	}
	if r := do(t, ts, method, path, "", body); r.code != http.StatusOK {
		t.Fatalf("%s definition: %d %v", method, r.code, r.obj)
	}
}

// startRecorder is a ResponseRecorder that cancels its request as the
// response starts, so that a watch served to it returns.
type startRecorder struct {
	*httptest.ResponseRecorder
	cancel context.CancelFunc
}

func (r startRecorder) WriteHeader(code int) {
	r.ResponseRecorder.WriteHeader(code)
	r.cancel()
}
