package server

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/storage"
)

// Health checks, as kube-apiserver's (k8s.io/apiserver/pkg/server/healthz):
// /livez and /healthz run ping and the storage check, /readyz those, the
// storage readiness check and shutdown. Each check is also served alone at
// /<endpoint>/<name>, which gives its error: those paths are authorized
// as any other, while the endpoints themselves are open and withhold the
// reasons.
//
// kube's log check (klog flushing) and informer-sync have no counterpart:
// the server's followers have listed before it serves.

// storageProbeTimeout bounds one probe of the store: kube's
// DefaultHealthcheckTimeout and DefaultReadinessTimeout.
const storageProbeTimeout = 2 * time.Second

// healthCheck is one named check.
type healthCheck struct {
	name  string
	check func() error
}

// routeHealth serves /livez, /readyz and /healthz and their checks.
func (s *Server) routeHealth() {
	name := cmp.Or(s.cfg.StorageName, "storage")
	probe := newStorageProbe(s.cfg.Storage, storageProbeTimeout, s.log)
	ping := healthCheck{"ping", func() error { return nil }}
	store := healthCheck{name, probe.check}
	live := []healthCheck{ping, store}
	s.routeHealthEndpoint("healthz", live)
	s.routeHealthEndpoint("livez", live)
	s.routeHealthEndpoint("readyz", []healthCheck{ping, store, {name + "-readiness", probe.check}, {"shutdown", s.shuttingDown}})
}

// shuttingDown is kube's shutdown check: it fails once Close has begun,
// so that load balancers stop sending requests while the server drains.
func (s *Server) shuttingDown() error {
	select {
	case <-s.shutdown:
		return errors.New("process is shutting down")
	default:
		return nil
	}
}

func (s *Server) routeHealthEndpoint(endpoint string, checks []healthCheck) {
	observe := s.metrics.HealthChecks()
	s.mux.HandleFunc("/"+endpoint, func(w http.ResponseWriter, r *http.Request) {
		serveHealth(w, r, endpoint, checks, observe)
	})
	for _, c := range checks {
		s.mux.HandleFunc("/"+endpoint+"/"+c.name, func(w http.ResponseWriter, _ *http.Request) {
			if err := c.check(); err != nil {
				http.Error(w, "internal server error: "+err.Error(), http.StatusInternalServerError)
				return
			}
			writeHealthOK(w, "ok")
		})
	}
}

// serveHealth runs checks but those the query's exclude parameters name,
// and answers as kube: "ok", or with verbose a line per check and
// "<endpoint> check passed"; on a failure always the lines, the failed
// checks' reasons withheld, and "<endpoint> check failed", with 500.
func serveHealth(w http.ResponseWriter, r *http.Request, endpoint string, checks []healthCheck, observe func(name, endpoint string, passed bool)) {
	query := r.URL.Query()
	excluded := query["exclude"]
	unknown := map[string]bool{}
	for _, name := range excluded {
		unknown[name] = true
	}
	var out bytes.Buffer
	failed := false
	for _, c := range checks {
		if slices.Contains(excluded, c.name) {
			delete(unknown, c.name)
			fmt.Fprintf(&out, "[+]%s excluded: ok\n", c.name)
			continue
		}
		err := c.check()
		observe(c.name, endpoint, err == nil)
		if err != nil {
			failed = true
			fmt.Fprintf(&out, "[-]%s failed: reason withheld\n", c.name)
			continue
		}
		fmt.Fprintf(&out, "[+]%s ok\n", c.name)
	}
	if len(unknown) > 0 {
		names := make([]string, 0, len(unknown))
		for name := range unknown {
			names = append(names, strconv.Quote(name))
		}
		slices.Sort(names)
		fmt.Fprintf(&out, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(names, ","))
	}
	switch {
	case failed:
		http.Error(w, out.String()+endpoint+" check failed", http.StatusInternalServerError)
	case query.Has("verbose"):
		writeHealthOK(w, out.String()+endpoint+" check passed\n")
	default:
		writeHealthOK(w, "ok")
	}
}

func writeHealthOK(w http.ResponseWriter, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = w.Write([]byte(body))
}

// storageProbe asks the store whether it answers (its current revision: for
// etcd a linearizable read of one key, which fails without a quorum), at
// most once per half timeout, as kube's etcd check: the checks in between,
// and those while a probe runs, get the last answer, so that probes from
// several balancers cost the store one read a second.
type storageProbe struct {
	store   storage.Interface
	timeout time.Duration
	log     *slog.Logger

	mu sync.Mutex
	// guarded by mu:
	next    time.Time // until then, check answers last
	last    error
	lastAt  time.Time // when the probe that answered last began
	failing bool      // the last probe failed: the log has said so
}

func newStorageProbe(store storage.Interface, timeout time.Duration, log *slog.Logger) *storageProbe {
	return &storageProbe{store: store, timeout: timeout, log: log, last: errors.New("storage not probed yet")}
}

func (p *storageProbe) check() error {
	start := time.Now()
	p.mu.Lock()
	if start.Before(p.next) {
		defer p.mu.Unlock()
		return p.last
	}
	p.next = start.Add(p.timeout / 2)
	p.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	_, err := p.store.CurrentRevision(ctx)
	if err != nil {
		err = fmt.Errorf("error getting data from storage: %w", err)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	// The answer stands for half a timeout from now, not from the start:
	// the checks after it in the same request (/readyz's two of the store)
	// get it rather than wait for another probe.
	p.next = time.Now().Add(p.timeout / 2)
	if start.Before(p.lastAt) {
		return err // a later probe has answered already
	}
	if failing := err != nil; failing != p.failing {
		p.log.Warn("storage health changed", "healthy", !failing, "err", err)
		p.failing = failing
	}
	p.last, p.lastAt = err, start
	return err
}
