package server

import (
	"context"
	"errors"
	"net/http/httptest"
	"strings"
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

// TestQuotaGiveBackRetried checks that the leader retries a quota whose
// recompute after a delete met a conflict at its next look, not at the
// next quotaResync.
func TestQuotaGiveBackRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &conflictOnce{Interface: memory.New()}
		defer store.Close()
		s, err := New(t.Context(), Config{Storage: store})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		h := s.Handler()
		send := func(method, path, body string, code int) api.Object {
			t.Helper()
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, httptest.NewRequest(method, path, strings.NewReader(body)))
			if rec.Code != code {
				t.Fatalf("%s %s: %d %s, want %d", method, path, rec.Code, rec.Body, code)
			}
			obj, err := api.ParseObject(rec.Body.Bytes())
			if err != nil {
				t.Fatal(err)
			}
			return obj
		}
		used := func() any {
			q := send("GET", "/api/v1/namespaces/q/resourcequotas/q", "", 200)
			return mapAt(mapAt(q, "status"), "used")["count/configmaps"]
		}
		// waitUsed lets the leader look n times, until used is want.
		waitUsed := func(want string, n int) {
			t.Helper()
			for range n {
				time.Sleep(quotaPoll)
				synctest.Wait()
				if used() == want {
					return
				}
			}
			t.Fatalf("used count/configmaps %v after %d looks, want %s", used(), n, want)
		}
		send("POST", "/api/v1/namespaces", `{"metadata":{"name":"q"}}`, 201)
		send("POST", "/api/v1/namespaces/q/resourcequotas", `{"metadata":{"name":"q"},"spec":{"hard":{"count/configmaps":"5"}}}`, 201)
		waitUsed("0", 3)
		send("POST", "/api/v1/namespaces/q/configmaps", `{"metadata":{"name":"c"}}`, 201)
		if got := used(); got != "1" {
			t.Fatalf("used count/configmaps %v after a create, want 1", got)
		}
		waitUsed("1", 1) // the leader has seen the configmap
		start := time.Now()
		store.armed.Store(true)
		send("DELETE", "/api/v1/namespaces/q/configmaps/c", "", 200)
		waitUsed("0", 3)
		if store.armed.Load() {
			t.Fatal("no quota write met the conflict")
		}
		if d := time.Since(start); d >= quotaResync {
			t.Fatalf("given back after %v, the resync's period", d)
		}
	})
}
