package server

import (
	"context"

	"github.com/listwatch/listwatch/internal/server/gc"
)

// collect runs a garbage collector over the server's watch caches until
// ctx ends: a controller, run while this server leads. Each lead starts a
// new one, whose graph is built from the caches again.
func (s *Server) collect(ctx context.Context) {
	gc.New(gc.Config{
		Catalog: s.catalog, Registry: s.registry, Cache: s.caches.get,
		Workers: s.cfg.ConcurrentGCSyncs, Metrics: s.metrics, Log: s.log,
	}).Run(ctx)
}
