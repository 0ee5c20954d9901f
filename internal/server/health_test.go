package server

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage/memory"
)

// flakyStore is a memory store whose CurrentRevision, the health probe,
// fails while down is set and waits for its context's end while hang is.
type flakyStore struct {
	*memory.Store
	down, hang atomic.Bool
	probes     atomic.Int64
}

func (s *flakyStore) CurrentRevision(ctx context.Context) (int64, error) {
	s.probes.Add(1)
	switch {
	case s.hang.Load():
		<-ctx.Done()
		return 0, ctx.Err()
	case s.down.Load():
		return 0, errors.New("unreachable")
	}
	return s.Store.CurrentRevision(ctx)
}

// healthAnswer is what a health endpoint answered.
type healthAnswer struct {
	Code        int
	Body        string
	ContentType string
}

func askHealth(t *testing.T, h http.Handler, path string) healthAnswer {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	return healthAnswer{rec.Code, rec.Body.String(), rec.Header().Get("Content-Type")}
}

type healthCase struct {
	path string
	want healthAnswer
}

func checkAnswers(t *testing.T, h http.Handler, cases []healthCase) {
	t.Helper()
	for _, c := range cases {
		if diff := cmp.Diff(c.want, askHealth(t, h, c.path)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.path, diff)
		}
	}
}

const textPlain = "text/plain; charset=utf-8"

// TestHealthEndpoints checks kube's format of /readyz, /livez and /healthz
// (verbose, exclude, a check alone) on a store that answers, then fails,
// then is closed by shutdown; and the kubernetes_healthcheck metrics.
func TestHealthEndpoints(t *testing.T) {
	store := &flakyStore{Store: memory.New()}
	defer store.Close()
	s, err := New(t.Context(), Config{Storage: store, StorageName: "etcd", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := s.Handler()
	ok := func(body string) healthAnswer { return healthAnswer{200, body, textPlain} }
	failed := func(body string) healthAnswer { return healthAnswer{500, body + "\n", textPlain} }
	checkAnswers(t, h, []healthCase{
		{"/readyz", ok("ok")},
		{"/readyz?verbose", ok("[+]ping ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]shutdown ok\nreadyz check passed\n")},
		{"/livez?verbose=1", ok("[+]ping ok\n[+]etcd ok\nlivez check passed\n")},
		{"/healthz?verbose", ok("[+]ping ok\n[+]etcd ok\nhealthz check passed\n")},
		{"/readyz?verbose&exclude=etcd&exclude=nope&exclude=b", ok("[+]ping ok\n[+]etcd excluded: ok\n[+]etcd-readiness ok\n[+]shutdown ok\n" +
			`warn: some health checks cannot be excluded: no matches for "b","nope"` + "\nreadyz check passed\n")},
		{"/readyz/etcd-readiness", ok("ok")},
		{"/livez/ping", ok("ok")},
	})

	// The last probe is younger than a second: wait for the next one.
	store.down.Store(true)
	testwait.Until(t, 10*time.Second, "/livez to fail after the store", func() bool { return askHealth(t, h, "/livez").Code != 200 })
	checkAnswers(t, h, []healthCase{
		{"/readyz", failed("[+]ping ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n[+]shutdown ok\nreadyz check failed")},
		{"/livez?verbose", failed("[+]ping ok\n[-]etcd failed: reason withheld\nlivez check failed")},
		{"/readyz?exclude=etcd&exclude=etcd-readiness", ok("ok")},
		{"/readyz/etcd", failed("internal server error: error getting data from storage: unreachable")},
	})
	m := scrape(t, s)
	for series, want := range map[string]float64{
		`kubernetes_healthcheck{name="etcd",type="readyz"}`:                          0,
		`kubernetes_healthcheck{name="shutdown",type="readyz"}`:                      1,
		`kubernetes_healthchecks_total{name="etcd",status="success",type="readyz"}`:  2,
		`kubernetes_healthchecks_total{name="etcd",status="error",type="readyz"}`:    1,
		`kubernetes_healthchecks_total{name="ping",status="success",type="healthz"}`: 1,
	} {
		if got := m.value(t, series); got != want {
			t.Errorf("%s = %v, want %v", series, got, want)
		}
	}

	s.Close()
	want := failed("[+]ping ok\n[-]etcd failed: reason withheld\n[-]etcd-readiness failed: reason withheld\n[-]shutdown failed: reason withheld\nreadyz check failed")
	if diff := cmp.Diff(want, askHealth(t, h, "/readyz")); diff != "" {
		t.Errorf("/readyz after Close (-want +got):\n%s", diff)
	}
}

// TestStorageProbe checks the probe's bounds on a fake clock: one store
// call per half timeout whatever the number of checks, the last answer in
// between, and a store that does not answer failing the check after the
// timeout while other checks get the last answer at once.
func TestStorageProbe(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := &flakyStore{Store: memory.New()}
		defer store.Close()
		p := newStorageProbe(store, 2*time.Second, slog.New(slog.NewTextHandler(io.Discard, nil)))
		for range 10 {
			if err := p.check(); err != nil {
				t.Fatal(err)
			}
		}
		store.down.Store(true)
		if err := p.check(); err != nil || store.probes.Load() != 1 {
			t.Fatalf("within a second of the first probe: %v after %d probes, want the first answer", err, store.probes.Load())
		}
		time.Sleep(time.Second)
		if err := p.check(); err == nil || store.probes.Load() != 2 {
			t.Fatalf("a second later: %v after %d probes, want the failure of a second", err, store.probes.Load())
		}

		store.down.Store(false)
		store.hang.Store(true)
		time.Sleep(time.Second)
		start := time.Now()
		errc := make(chan error)
		go func() { errc <- p.check() }()
		synctest.Wait() // the probe waits on the store
		if err := p.check(); err == nil || store.probes.Load() != 3 {
			t.Errorf("during a probe: %v after %d probes, want the last failure", err, store.probes.Load())
		}
		if err := <-errc; !errors.Is(err, context.DeadlineExceeded) || time.Since(start) != 2*time.Second {
			t.Errorf("a store that does not answer: %v after %v, want DeadlineExceeded after 2s", err, time.Since(start))
		}
		if err := p.check(); !errors.Is(err, context.DeadlineExceeded) || store.probes.Load() != 3 {
			t.Errorf("right after a probe ended: %v after %d probes, want its answer", err, store.probes.Load())
		}
	})
}
