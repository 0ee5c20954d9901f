package server

import (
	"net/http"
	"net/http/pprof"

	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// routeOperations adds the health checks, /metrics and, if configured,
// /debug/pprof/. /livez and /healthz answer ok while the process serves;
// /readyz answers 503 once Close has begun, so that load balancers stop
// sending requests while the server drains.
func (s *Server) routeOperations() {
	s.mux.HandleFunc("/healthz", serveOK)
	s.mux.HandleFunc("/livez", serveOK)
	s.mux.HandleFunc("/readyz", s.serveReadyz)
	s.mux.Handle("/metrics", s.metrics.Handler())
	if s.cfg.Profiling {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
}

func serveOK(w http.ResponseWriter, _ *http.Request) { writeText(w, http.StatusOK, "ok") }

func (s *Server) serveReadyz(w http.ResponseWriter, r *http.Request) {
	select {
	case <-s.shutdown:
		writeText(w, http.StatusServiceUnavailable, "shutting down")
	default:
		serveOK(w, r)
	}
}

func writeText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(text))
}

// resourceID names res in metric labels.
func resourceID(res *resource.Resource) metrics.ResourceID {
	return metrics.ResourceID{Group: res.Group, Version: res.Version, Kind: res.Kind, Resource: res.Plural}
}

// countingSink counts the events a watch sends.
type countingSink struct {
	watchSink
	m *metrics.Resource
}

// countEvents makes sink count what it sends in res's watch metrics.
func (s *Server) countEvents(sink watchSink, res *resource.Resource) countingSink {
	return countingSink{watchSink: sink, m: s.metrics.Resource(resourceID(res))}
}

func (c countingSink) send(e *watchEncoder, items []watchcache.Item) error {
	if err := c.watchSink.send(e, items); err != nil {
		return err
	}
	for _, it := range items {
		c.m.WatchEvent(len(it.Object))
	}
	return nil
}
