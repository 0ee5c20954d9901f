package server

import (
	"context"
	"sync"

	"github.com/listwatch/listwatch/internal/server/leader"
)

// ControllerLease names the Lease in kube-system that elects, among the
// servers sharing a store, the one that runs the in-server controllers,
// as kube-controller-manager's Lease is named for kube's.
const ControllerLease = "listwatch-controller-manager"

// election runs the server's controllers while it leads, until stop.
type election struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when Run has returned (the Lease released)
}

// newElector makes this server a candidate for ControllerLease.
func (s *Server) newElector() (*leader.Elector, error) {
	leases, _ := s.catalog.Get("coordination.k8s.io", "v1", "leases")
	cfg := s.cfg.Election
	cfg.Registry, cfg.Leases, cfg.Namespace, cfg.Name = s.registry, leases, "kube-system", ControllerLease
	cfg.Log, cfg.Leading = s.log, s.metrics.LeaderStatus(ControllerLease)
	return leader.New(cfg)
}

// startElection makes e stand, running every controller of s.controllers
// while this server holds the Lease: all start on acquiring it and stop
// on losing it or at stop.
func (s *Server) startElection(e *leader.Elector) *election {
	ctx, cancel := context.WithCancel(context.Background())
	el := &election{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(el.done)
		e.Run(ctx, s.runControllers)
	}()
	return el
}

// runControllers runs every controller until ctx ends and all have
// returned.
func (s *Server) runControllers(ctx context.Context) {
	var wg sync.WaitGroup
	for _, run := range s.controllers {
		wg.Go(func() { run(ctx) })
	}
	wg.Wait()
}

// stop stops the controllers, releases the Lease if held, and waits.
func (el *election) stop() {
	el.cancel()
	<-el.done
}
