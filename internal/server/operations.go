package server

import (
	"net/http/pprof"

	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// routeOperations adds the health checks (health.go), /metrics and, if
// configured, /debug/pprof/.
func (s *Server) routeOperations() {
	s.routeHealth()
	s.mux.Handle("/metrics", s.metrics.Handler())
	if s.cfg.Profiling {
		s.mux.HandleFunc("/debug/pprof/", pprof.Index)
		s.mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
		s.mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		s.mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		s.mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	}
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
