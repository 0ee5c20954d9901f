package server

import (
	"context"

	"github.com/listwatch/listwatch/internal/server/gc"
)

// startCollector runs the garbage collector over the server's watch
// caches until the returned function, which waits for it, is called; a
// ConcurrentGCSyncs of 0 runs none.
func (s *Server) startCollector() (stop func()) {
	if s.cfg.ConcurrentGCSyncs == 0 {
		return func() {}
	}
	c := gc.New(gc.Config{
		Catalog: s.catalog, Registry: s.registry, Cache: s.caches.get,
		Workers: s.cfg.ConcurrentGCSyncs, Metrics: s.metrics, Log: s.log,
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}
