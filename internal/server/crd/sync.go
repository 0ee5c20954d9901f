package crd

import (
	"context"
	"log/slog"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/follow"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/server/webhookclient"
	"github.com/listwatch/listwatch/storage"
)

// Sync keeps a catalogue serving the resources of the definitions in a
// store, following them with a follow.Follower (every change applied at
// most once, never older over newer).
type Sync struct {
	catalog     *resource.Catalog
	definitions *resource.Resource // the customresourcedefinitions resource, for keys
	log         *slog.Logger
	follower    *follow.Follower
	observer    ConversionObserver
	resolver    webhookclient.Resolver

	// mu guards converters, the conversion webhooks of the definitions
	// served, by name, and closed: a CRD write's Refresh may still apply
	// a definition while Close releases them.
	mu         sync.Mutex
	converters map[string]*webhookConverter
	closed     bool
}

// Start loads the definitions in store into catalog and follows their
// changes until Close. definitions is the customresourcedefinitions resource;
// observer, if not nil, is told of every call of a conversion webhook;
// resolver resolves the conversion webhooks' service references.
func Start(ctx context.Context, catalog *resource.Catalog, store storage.Interface, definitions *resource.Resource, observer ConversionObserver, resolver webhookclient.Resolver, log *slog.Logger) (*Sync, error) {
	s := &Sync{catalog: catalog, definitions: definitions, log: log, observer: observer, resolver: resolver, converters: map[string]*webhookConverter{}}
	f, err := follow.Start(ctx, store, definitions.KeyPrefix(""), "CustomResourceDefinitions", s.apply, log)
	if err != nil {
		return nil, err
	}
	s.follower = f
	return s, nil
}

// Close stops following changes, waits for the goroutine to end and
// releases the conversion webhooks' connections.
func (s *Sync) Close() {
	s.follower.Close()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	for _, c := range s.converters {
		c.close()
	}
	clear(s.converters)
}

// Refresh applies the stored state of one definition, after a write through
// this server, so the response goes out once the catalogue serves it. It
// reports whether the definition is gone.
func (s *Sync) Refresh(ctx context.Context, name string) (gone bool, err error) {
	return s.follower.Refresh(ctx, s.definitions.Key("", name))
}

// apply makes the catalogue serve the resources of the definition stored
// at key (none when value is nil).
func (s *Sync) apply(key string, _ int64, value []byte) {
	name := strings.TrimPrefix(key, s.definitions.KeyPrefix(""))
	var rs []*resource.Resource
	var conv *webhookConverter
	if value != nil {
		obj, err := api.ParseObject(value)
		if err != nil {
			s.log.Error("stored CustomResourceDefinition is not JSON; not serving it", "name", name, "err", err)
		} else if rs, conv, err = resources(obj, s.observer, s.resolver); err != nil {
			s.log.Error("invalid stored CustomResourceDefinition; not serving it", "name", name, "err", err)
		}
	}
	s.catalog.Replace(name, rs)
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.converters[name]; old != nil {
		old.close() // its idle connections; calls in flight finish
	}
	delete(s.converters, name)
	switch {
	case conv == nil:
	case s.closed:
		conv.close() // applied after Close: nothing else would release it
	default:
		s.converters[name] = conv
	}
}
