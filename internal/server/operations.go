package server

import (
	"net/http/pprof"

	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/resource"
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
