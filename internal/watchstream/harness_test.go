package watchstream

import (
	"cmp"
	"context"
	"crypto/tls"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// testServer serves the watches of one watch cache, over a memory store,
// through an engine, as internal/server does without its REST surface: a
// watch of every object as JSON, from ?resourceVersion (else from the
// initial state), for ?timeout, with
// bookmarks if ?bookmarks, as a WebSocket if asked for.
type testServer struct {
	t     testing.TB
	e     *Engine
	store *memory.Store
	cache *watchcache.Cache
	m     *metrics.Resource
	ended chan int64 // each detached watch's body bytes, as it ends (Config.Detach)

	mu   sync.Mutex
	wake func(*watchcache.PollBatch) // the cache's WakePolled: the engine's, unless a test takes it
}

const testPrefix = "/configmaps/"

// newTestServer starts an engine of cfg, and the cache that feeds it.
func newTestServer(t testing.TB, cfg Config) *testServer {
	store := memory.New()
	return newTestServerOn(t, cfg, store, store)
}

// newTestServerOn is newTestServer on store, whose cache reads it through
// read (store itself, or a wrapper of it).
func newTestServerOn(t testing.TB, cfg Config, store *memory.Store, read storage.Interface) *testServer {
	x := &testServer{t: t, store: store, ended: make(chan int64, 64)}
	x.m = metrics.New().Resource(metrics.ResourceID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"})
	cfg.Log = slog.New(slog.DiscardHandler)
	cfg.BookmarkInterval = cmp.Or(cfg.BookmarkInterval, time.Minute)
	cfg.Detach = func(*http.Request) func(int64) { return func(n int64) { x.ended <- n } }
	x.e = New(cfg)
	x.wake = func(b *watchcache.PollBatch) { x.e.WakePolled(b, x.m) }
	x.cache = watchcache.New(watchcache.Config{
		Storage: read, Prefix: testPrefix, Codec: watchcache.Codec{Decode: decodeTest},
		Logger: cfg.Log, WakePolled: func(b *watchcache.PollBatch) {
			x.mu.Lock()
			wake := x.wake
			x.mu.Unlock()
			wake(b)
		},
	})
	t.Cleanup(func() { x.e.Close(); x.cache.Close(); x.store.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := x.cache.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return x
}

func decodeTest(_ context.Context, kv storage.KV) (api.Object, error) {
	obj, err := api.ParseObject(kv.Value)
	if err != nil {
		return nil, err
	}
	obj.SetMeta("resourceVersion", strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

// ServeHTTP serves a watch.
func (x *testServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	from, _ := strconv.ParseInt(q.Get("resourceVersion"), 10, 64)
	timeout, err := time.ParseDuration(q.Get("timeout"))
	if err != nil {
		timeout = time.Minute
	}
	opts := Options{
		Encoder: plainJSON{}, ContentType: "application/json", Plain: true, Laneable: true,
		Bookmarks: q.Has("bookmarks"), Metrics: x.m,
	}
	if r.Header.Get("Upgrade") == "websocket" {
		opts.WebSocket = &Upgrade{Accept: streamtest.WSAccept}
	}
	st := x.e.Open(w, r, opts)
	wo := watchcache.WatchOptions{From: from, InitialEvents: !q.Has("resourceVersion")}
	st.WatchOptions(&wo)
	cw, err := x.cache.Watch(r.Context(), wo)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	if err := st.Serve(cw, time.Now().Add(timeout)); err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
	}
}

// serve serves x in cleartext, or over TLS (HTTP/1.1) on a Listener if
// tlsListener, or over TLS without one.
func (x *testServer) serve(transport string) *httptest.Server {
	ts := httptest.NewUnstartedServer(x)
	switch transport {
	case "cleartext":
		ts.Start()
	case "TLS":
		ts.Listener = Listener(ts.Listener)
		ts.Config.ConnContext = ConnContext
		fallthrough
	default:
		ts.TLS = &tls.Config{NextProtos: []string{"http/1.1"}}
		ts.StartTLS()
	}
	x.t.Cleanup(ts.Close)
	return ts
}

// dial connects to ts, over TLS if ts is.
func dial(t testing.TB, ts *httptest.Server) net.Conn {
	t.Helper()
	var conn net.Conn
	var err error
	if ts.TLS != nil {
		conn, err = tls.Dial("tcp", ts.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	} else {
		conn, err = net.Dial("tcp", ts.Listener.Addr().String())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// put creates the config map name and returns its revision.
func (x *testServer) put(name string) int64 {
	x.t.Helper()
	obj := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q,"namespace":"default"}}`, name)
	rev, err := x.store.Create(x.t.Context(), testPrefix+"default/"+name, []byte(obj))
	if err != nil {
		x.t.Fatal(err)
	}
	return rev
}

// only waits for the engine's one detached watch and returns it.
func (x *testServer) only() *detachedWatch {
	x.t.Helper()
	var found *detachedWatch
	testwait.Until(x.t, 10*time.Second, "a detached watch", func() bool {
		x.e.mu.Lock()
		defer x.e.mu.Unlock()
		for d := range x.e.live {
			found = d
		}
		return len(x.e.live) == 1
	})
	return found
}

// waitState waits until d is in one of states, and returns it.
func waitState(t *testing.T, d *detachedWatch, states ...sendState) sendState {
	t.Helper()
	var st sendState
	testwait.Until(t, 10*time.Second, fmt.Sprintf("the watch in a state of %v", states), func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		st = d.state
		for _, s := range states {
			if st == s {
				return true
			}
		}
		return false
	})
	return st
}
