package controller

import (
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
)

// DefaultMaxSilence is how long an informer's reflector may go without
// progress before Probes reports it unhealthy: three of kube-apiserver's
// bookmark intervals (the watch cache sends a watch that allows bookmarks
// one about every minute, cacher's bookmarkFrequency), so a quiet but
// live watch is never taken for a dead one.
const DefaultMaxSilence = 3 * time.Minute

// Probes answers a process's liveness and readiness from its informers:
// Readyz is ready once every informer has synced; Healthz is healthy while
// every informer's reflector has made progress (a list, a watch event or a
// bookmark) within MaxSilence, counted from when the informer was added
// for one that never has. Both answer 200 "ok", or 500 with one line per
// check ("[+]name ok", "[-]name failed: reason withheld") as
// controller-runtime's healthz does; ?verbose lists the checks on success
// too. Safe for concurrent use.
type Probes struct {
	maxSilence time.Duration

	mu     sync.Mutex
	checks []informerCheck // guarded by mu
}

// informerCheck is what Probes reads of one informer.
type informerCheck struct {
	name         string
	synced       func() bool
	lastProgress func() time.Time
	added        time.Time
}

// NewProbes returns Probes with no informers; maxSilence 0 means
// DefaultMaxSilence.
func NewProbes(maxSilence time.Duration) *Probes {
	if maxSilence <= 0 {
		maxSilence = DefaultMaxSilence
	}
	return &Probes{maxSilence: maxSilence}
}

// AddInformer adds inf to p's checks under name.
func AddInformer[T client.Object](p *Probes, name string, inf *cache.SharedIndexInformer[T]) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.checks = append(p.checks, informerCheck{name: name, synced: inf.HasSynced, lastProgress: inf.Reflector().LastSyncTime, added: time.Now()})
}

// Readyz returns the readiness handler.
func (p *Probes) Readyz() http.Handler {
	return p.handler("readyz", func(c informerCheck) bool { return c.synced() })
}

// Healthz returns the liveness handler.
func (p *Probes) Healthz() http.Handler {
	return p.handler("healthz", func(c informerCheck) bool {
		last := c.lastProgress()
		if last.Before(c.added) {
			last = c.added
		}
		return time.Since(last) <= p.maxSilence
	})
}

func (p *Probes) handler(kind string, pass func(informerCheck) bool) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		checks := p.checks
		p.mu.Unlock()
		passed := make([]bool, len(checks))
		failed := false
		for i, c := range checks {
			passed[i] = pass(c)
			failed = failed || !passed[i]
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if failed {
			w.WriteHeader(http.StatusInternalServerError)
		}
		if _, verbose := r.URL.Query()["verbose"]; !failed && !verbose {
			fmt.Fprint(w, "ok")
			return
		}
		for i, c := range checks {
			if passed[i] {
				fmt.Fprintf(w, "[+]%s ok\n", c.name)
			} else {
				fmt.Fprintf(w, "[-]%s failed: reason withheld\n", c.name)
			}
		}
		if failed {
			fmt.Fprintf(w, "%s check failed\n", kind)
		} else {
			fmt.Fprintf(w, "%s check passed\n", kind)
		}
	})
}
