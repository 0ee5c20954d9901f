package server

import (
	"context"

	"github.com/listwatch/listwatch/internal/server/servicealloc"
)

// startServiceAllocator gives the Services written through s their cluster
// IPs and node ports, as kube-apiserver's Service storage.
func (s *Server) startServiceAllocator(ctx context.Context) (*servicealloc.Allocator, error) {
	a, err := servicealloc.New(ctx, s.registry, s.cfg.Storage, s.catalog, s.cfg.Services, s.log)
	if err != nil {
		return nil, err
	}
	services, _ := s.catalog.Get("", "v1", "services")
	services.Allocate, services.Release = a.Begin, a.Release
	return a, nil
}
