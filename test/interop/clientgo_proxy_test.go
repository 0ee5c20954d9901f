package interop

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
)

// requestCounts classifies the GET requests on one collection that passed
// through a countingProxy.
type requestCounts struct {
	Lists          int // LIST: no watch parameter
	Watches        int // watch without sendInitialEvents
	StreamingLists int // watch with sendInitialEvents=true
	Protobuf       int // responses of the above in protobuf
}

// countingProxy is a reverse proxy in front of the server that counts the
// requests on one collection path, so that a test can tell a streaming
// list from LIST+WATCH without the server's help.
type countingProxy struct {
	collection string // path suffix, e.g. "/configmaps"
	mu         sync.Mutex
	counts     requestCounts // guarded by mu
}

// startCountingProxy proxies to target and counts GETs on paths that end
// in collection. It stops when t ends.
func startCountingProxy(t testing.TB, target, collection string) (*httptest.Server, *countingProxy) {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatalf("proxy target %q: %v", target, err)
	}
	p := &countingProxy{collection: collection}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // watch events pass through at once
	rp.ModifyResponse = p.countResponse
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.countRequest(r)
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, p
}

func (p *countingProxy) counted(r *http.Request) bool {
	return r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, p.collection)
}

func (p *countingProxy) countRequest(r *http.Request) {
	if !p.counted(r) {
		return
	}
	q := r.URL.Query()
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case !isTrue(q.Get("watch")):
		p.counts.Lists++
	case isTrue(q.Get("sendInitialEvents")):
		p.counts.StreamingLists++
	default:
		p.counts.Watches++
	}
}

func (p *countingProxy) countResponse(resp *http.Response) error {
	if !p.counted(resp.Request) || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/vnd.kubernetes.protobuf") {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.counts.Protobuf++
	return nil
}

// Counts returns the counts so far.
func (p *countingProxy) Counts() requestCounts {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.counts
}

func isTrue(v string) bool { return v == "true" || v == "1" }
