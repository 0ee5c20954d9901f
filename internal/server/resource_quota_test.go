package server

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// TestQuotaLockEndsWithContext checks that a write waiting for its
// namespace's quota lock gives up with kube's 504 when its request ends,
// and that the lock still works after.
func TestQuotaLockEndsWithContext(t *testing.T) {
	var l quotaLocks
	unlock, err := l.lock(t.Context(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		_, err := l.lock(ctx, "ns")
		done <- err
	}()
	cancel()
	err = <-done
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status.Code != 504 || se.Status.Reason != api.StatusReasonTimeout ||
		se.Status.Message != "Timeout: request did not complete within requested timeout - context canceled" {
		t.Fatalf("got %v, want kube's 504", err)
	}
	unlock()
	unlock, err = l.lock(t.Context(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}

// conflictOnce fails the next ResourceQuota write once armed, as a
// concurrent write of the quota would.
type conflictOnce struct {
	storage.Interface
	armed atomic.Bool
}

func (c *conflictOnce) Update(ctx context.Context, key string, rev int64, value []byte) (int64, error) {
	if strings.Contains(key, "resourcequotas") && c.armed.CompareAndSwap(true, false) {
		return 0, storage.ErrConflict
	}
	return c.Interface.Update(ctx, key, rev, value)
}

// quotaTestServer starts a server on store (in a synctest bubble).
func quotaTestServer(t *testing.T, store storage.Interface) quotaClient {
	s, err := New(t.Context(), Config{Storage: store})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return quotaClient{t, s.Handler()}
}

// quotaSend sends h a request and returns its answer's code and object.
func quotaSend(h http.Handler, method, path, body string) (int, api.Object) {
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
	obj, _ := api.ParseObject(rec.Body.Bytes())
	return rec.Code, obj
}

// quotaClient sends requests that must answer a code, and reads the used
// count/configmaps of quota q/q.
type quotaClient struct {
	t *testing.T
	h http.Handler
}

func (c quotaClient) send(method, path, body string, code int) api.Object {
	c.t.Helper()
	got, obj := quotaSend(c.h, method, path, body)
	if got != code {
		c.t.Fatalf("%s %s: %d %v, want %d", method, path, got, obj, code)
	}
	return obj
}

func (c quotaClient) used() any { return c.usedOf("count/configmaps") }

func (c quotaClient) usedOf(name string) any {
	q := c.send("GET", "/api/v1/namespaces/q/resourcequotas/q", "", 200)
	return mapAt(mapAt(q, "status"), "used")[name]
}

// waitUsed lets the leader look n times, until used is want.
func (c quotaClient) waitUsed(want string, n int) {
	c.t.Helper()
	c.waitUsedOf("count/configmaps", want, n)
}

// waitUsedOf lets the leader look n times, until name's used is want.
func (c quotaClient) waitUsedOf(name, want string, n int) {
	c.t.Helper()
	for range n {
		time.Sleep(quotaPoll)
		synctest.Wait()
		if c.usedOf(name) == want {
			return
		}
	}
	c.t.Fatalf("used %s %v after %d looks, want %s", name, c.usedOf(name), n, want)
}

// TestQuotaGiveBackRetried checks that the leader retries a quota whose
// recompute after a delete met a conflict at its next look, not at the
// next quotaResync.
func TestQuotaGiveBackRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &conflictOnce{Interface: memory.New()}
		defer store.Close()
		c := quotaTestServer(t, store)
		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		c.send("POST", "/api/v1/namespaces/q/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{"count/configmaps":"5"}}}`, 201)
		c.waitUsed("0", 3)
		c.send("POST", "/api/v1/namespaces/q/configmaps", `{"metadata":{"name":"c"}}`, 201)
		if got := c.used(); got != "1" {
			t.Fatalf("used count/configmaps %v after a create, want 1", got)
		}
		c.waitUsed("1", 1) // the leader has seen the configmap
		start := time.Now()
		store.armed.Store(true)
		c.send("DELETE", "/api/v1/namespaces/q/configmaps/c", "", 200)
		c.waitUsed("0", 3)
		if store.armed.Load() {
			t.Fatal("no quota write met the conflict")
		}
		if d := time.Since(start); d >= quotaResync {
			t.Fatalf("given back after %v, the resync's period", d)
		}
	})
}

// holdCreate holds the next ConfigMap create once armed, until release
// is closed, telling held when it is.
type holdCreate struct {
	storage.Interface
	armed   atomic.Bool
	held    chan struct{}
	release chan struct{}
}

func (h *holdCreate) Create(ctx context.Context, key string, value []byte) (int64, error) {
	if strings.Contains(key, "configmaps") && h.armed.CompareAndSwap(true, false) {
		close(h.held)
		<-h.release
	}
	return h.Interface.Create(ctx, key, value)
}

// TestQuotaRecomputeKeepsInflightCharge checks that the leader's
// recompute does not give back the charge of a create admitted and not
// yet stored, which would let a second create past the quota.
func TestQuotaRecomputeKeepsInflightCharge(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &holdCreate{Interface: memory.New(), held: make(chan struct{}), release: make(chan struct{})}
		defer store.Close()
		c := quotaTestServer(t, store)
		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		c.send("POST", "/api/v1/namespaces/q/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{"count/configmaps":"1"}}}`, 201)
		c.waitUsed("0", 3)
		store.armed.Store(true)
		created := make(chan struct{})
		go func() {
			defer close(created)
			if code, obj := quotaSend(c.h, "POST", "/api/v1/namespaces/q/configmaps", `{"metadata":{"name":"a"}}`); code != 201 {
				t.Errorf("create a: %d %v, want 201", code, obj)
			}
		}()
		<-store.held
		release := sync.OnceFunc(func() { close(store.release) })
		defer release() // if the test fails first
		// A full recompute while a's charge is written and a is not.
		time.Sleep(quotaResync)
		synctest.Wait()
		if got := c.used(); got != "1" {
			t.Errorf("used count/configmaps %v with a create in flight, want 1", got)
		}
		c.send("POST", "/api/v1/namespaces/q/configmaps", `{"metadata":{"name":"b"}}`, 403)
		release()
		<-created
		c.waitUsed("1", 2)
		// Every charge's write has ended: a delete is given back.
		c.send("DELETE", "/api/v1/namespaces/q/configmaps/a", "", 200)
		c.waitUsed("0", 2)
	})
}

// holdQuotaEvents holds the events of ResourceQuotas from the watch
// caches from hold until release.
type holdQuotaEvents struct {
	storage.Interface
	mu   sync.Mutex
	open chan struct{} // guarded by mu: closed while events flow
}

func (h *holdQuotaEvents) gate() chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.open
}

func (h *holdQuotaEvents) hold() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.open = make(chan struct{})
}

func (h *holdQuotaEvents) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	select {
	case <-h.open:
	default:
		close(h.open)
	}
}

func (h *holdQuotaEvents) Watch(ctx context.Context, prefix string, from int64) (storage.Watcher, error) {
	w, err := h.Interface.Watch(ctx, prefix, from)
	if err != nil || !strings.Contains(prefix, "resourcequotas") {
		return w, err
	}
	held := &heldWatcher{Watcher: w, events: make(chan []storage.Event)}
	go func() { // ends with w, when the store closes
		defer close(held.events)
		for batch := range w.Events() {
			<-h.gate()
			held.events <- batch
		}
	}()
	return held, nil
}

type heldWatcher struct {
	storage.Watcher
	events chan []storage.Event
}

func (w *heldWatcher) Events() <-chan []storage.Event { return w.events }

// TestQuotaEnforcedOnceWritten checks that a quota's status written
// through a server is enforced by its next charge, though the quotas'
// watch cache has yet to see it (kube looks quotas up live for this).
func TestQuotaEnforcedOnceWritten(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		open := make(chan struct{})
		close(open)
		store := &holdQuotaEvents{Interface: memory.New(), open: open}
		defer store.Close()
		c := quotaTestServer(t, store)
		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		c.send("POST", "/api/v1/namespaces/q/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{"count/configmaps":"0"}}}`, 201)
		synctest.Wait() // the cache has the quota, without a status
		store.hold()
		defer store.release() // if the test fails first
		time.AfterFunc(2*quotaPoll, store.release)
		time.Sleep(quotaPoll)
		synctest.Wait()
		if got := c.used(); got != "0" {
			t.Fatalf("used count/configmaps %v, want the leader's 0", got)
		}
		obj := c.send("POST", "/api/v1/namespaces/q/configmaps", `{"metadata":{"name":"a"}}`, 403)
		if want := `configmaps "a" is forbidden: exceeded quota: q, requested: count/configmaps=1, used: count/configmaps=0, limited: count/configmaps=0`; obj["message"] != want {
			t.Errorf("message %q, want %q", obj["message"], want)
		}
	})
}

// TestQuotaFinishedPodGivenBack checks that a pod's usage is given back
// within a look or two of its finishing (an update), not at the next
// quotaResync.
func TestQuotaFinishedPodGivenBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		defer store.Close()
		c := quotaTestServer(t, store)
		c.send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		c.send("POST", "/api/v1/namespaces/q/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{"pods":"5"}}}`, 201)
		c.waitUsedOf("pods", "0", 3)
		pod := c.send("POST", "/api/v1/namespaces/q/pods", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, 201)
		c.waitUsedOf("pods", "1", 2) // the leader has seen the pod
		start := time.Now()
		pod["status"].(map[string]any)["phase"] = "Succeeded" // the rest (qosClass) is immutable
		b, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		c.send("PUT", "/api/v1/namespaces/q/pods/p/status", string(b), 200)
		c.waitUsedOf("pods", "0", 2)
		if d := time.Since(start); d >= quotaResync {
			t.Fatalf("given back after %v, the resync's period", d)
		}
	})
}
