package controller

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/client/cache/cachetest"
)

// probe asks h and checks its answer.
func probe(t *testing.T, h http.Handler, path string, wantCode int, wantBody string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	if rec.Code != wantCode || rec.Body.String() != wantBody {
		t.Errorf("GET %s = %d %q, want %d %q", path, rec.Code, rec.Body.String(), wantCode, wantBody)
	}
}

func TestProbesFollowSyncAndProgress(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		lw := cachetest.NewFakeListerWatcher[*object]() // no list yet: every List fails
		everySecond := cache.Backoff{Initial: time.Second, Factor: 1, Cap: time.Second}
		inf := cache.NewInformer(lw, cache.InformerOptions[*object]{Reflector: cache.ReflectorOptions{Backoff: everySecond, WatchErrorHandler: func(error) {}}})
		synced, _ := newInformer(t, newObject("ns", "a", 1))
		p := NewProbes(time.Minute)
		AddInformer(p, "objects", inf)
		AddInformer(p, "others", synced)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); _ = inf.Run(ctx) }()
		defer func() { cancel(); <-done }()

		time.Sleep(30 * time.Second) // the bubble's clock: lists fail for 30 s
		probe(t, p.Readyz(), "/readyz", 500, "[-]objects failed: reason withheld\n[+]others ok\nreadyz check failed\n")
		probe(t, p.Healthz(), "/healthz", 200, "ok")
		time.Sleep(31 * time.Second) // no progress for longer than a minute since it was added
		probe(t, p.Healthz(), "/healthz", 500, "[-]objects failed: reason withheld\n[-]others failed: reason withheld\nhealthz check failed\n")

		lw.AddList("10")
		w := <-lw.Watches // listed, watching
		synctest.Wait()
		probe(t, p.Readyz(), "/readyz", 200, "ok")
		probe(t, p.Readyz(), "/readyz?verbose", 200, "[+]objects ok\n[+]others ok\nreadyz check passed\n")
		probe(t, p.Healthz(), "/healthz", 500, "[+]objects ok\n[-]others failed: reason withheld\nhealthz check failed\n")

		time.Sleep(time.Minute + time.Second) // a watch with nothing to say for a minute
		probe(t, p.Healthz(), "/healthz", 500, "[-]objects failed: reason withheld\n[-]others failed: reason withheld\nhealthz check failed\n")
		w.Send(client.Event[*object]{Type: client.Bookmark, Object: newObject("", "", 11)})
		synctest.Wait()
		probe(t, p.Healthz(), "/healthz?verbose", 500, "[+]objects ok\n[-]others failed: reason withheld\nhealthz check failed\n")
	})
}
