package cuttest

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/internal/server"
	"github.com/listwatch/listwatch/storage/memory"
)

// Server is a listwatch server running in the test process on a memory
// store, anonymous on a loopback port (every request allowed), that counts
// the reads of each client on each collection.
type Server struct {
	// URL is the server's base URL (http://127.0.0.1:port).
	URL string
	// Addr is its host:port, for a Proxy.
	Addr string

	mu    sync.Mutex
	reads map[readKey]*Reads // guarded by mu
}

// Reads counts a client's GETs of one collection.
type Reads struct {
	Lists   int // LIST: no watch
	Watches int // watches, streaming lists included
}

type readKey struct{ userAgent, resource string }

// StartServer starts a Server that stops when the test ends.
func StartServer(t testing.TB) *Server {
	t.Helper()
	store := memory.New()
	s, err := server.New(t.Context(), server.Config{Storage: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	srv := &Server{reads: map[readKey]*Reads{}}
	h := s.Handler()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.count(r)
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.Close(); s.Close(); store.Close() })
	u, err := url.Parse(ts.URL)
	if err != nil {
		t.Fatal(err)
	}
	srv.URL, srv.Addr = ts.URL, u.Host
	return srv
}

// count notes a GET of a collection: a path whose last segment is a
// resource, after "namespaces/<ns>" or the API version.
func (s *Server) count(r *http.Request) {
	if r.Method != http.MethodGet {
		return
	}
	segs := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	collection := len(segs)%2 == 1 // /api/v1/R, /api/v1/namespaces/NS/R
	if segs[0] == "apis" {
		collection = !collection // /apis/G/V/R
	}
	if len(segs) < 3 || !collection {
		return
	}
	resource := segs[len(segs)-1]
	if w := r.URL.Query().Get("watch"); w == "true" || w == "1" {
		s.add(r.UserAgent(), resource, func(n *Reads) { n.Watches++ })
		return
	}
	s.add(r.UserAgent(), resource, func(n *Reads) { n.Lists++ })
}

func (s *Server) add(userAgent, resource string, f func(*Reads)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := readKey{userAgent, resource}
	if s.reads[k] == nil {
		s.reads[k] = &Reads{}
	}
	f(s.reads[k])
}

// Reads returns the reads of resource (e.g. "configmaps") by the clients
// whose User-Agent is userAgent.
func (s *Server) Reads(userAgent, resource string) Reads {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := s.reads[readKey{userAgent, resource}]; n != nil {
		return *n
	}
	return Reads{}
}
