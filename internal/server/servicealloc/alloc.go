// Package servicealloc gives Services their cluster IPs and node ports as
// kube-apiserver's Service storage does (pkg/registry/core/service/storage,
// alloc.go): on create, on update (a type change, a dual-stack upgrade or
// downgrade) and, after a delete, freeing them.
//
// Every address given is recorded as kube 1.37 records it, as a
// networking.k8s.io/v1 IPAddress named by the address, with the Service as
// its parent; every node port as a key of its own (NodePortPrefix). The
// store's create of that object or key is the lock: of several servers on
// one store asking for the same address or port, one create succeeds and
// the others see it taken, so that no two Services share one, across
// servers and restarts. Each server follows both prefixes (internal/follow)
// to skip what is taken when it looks for a free one, as kube's allocator
// reads its IPAddress informer.
//
// An allocation made for a write that then fails is released; one that no
// stored Service holds (a server stopped between the two writes) is freed
// by Repair once older than RepairGrace, as kube's repair controllers.
package servicealloc

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/follow"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// releaseTimeout bounds the writes that free an allocation after its
// request has answered (or failed).
const releaseTimeout = 10 * time.Second

// Config is what kube-apiserver's flags say of the ranges.
type Config struct {
	// ClusterIPRanges are --service-cluster-ip-range: one prefix, or two of
	// different families (dual stack); the first family is the default.
	// Empty means DefaultClusterIPRange.
	ClusterIPRanges []netip.Prefix
	// NodePorts is --service-node-port-range; zero means
	// DefaultNodePortRange.
	NodePorts PortRange
}

// Allocator gives Services their cluster IPs and node ports.
type Allocator struct {
	registry    *registry.Registry
	store       storage.Interface
	ipAddresses *resource.Resource
	events      *resource.Resource // events.k8s.io/v1, for Repair's warnings
	ranges      []ipRange
	ports       PortRange
	log         *slog.Logger
	rand        *rand.Rand // where a search for a free one starts

	ips, portsTaken *takenSet
	followers       []*follow.Follower
}

// New returns an Allocator over store, following the addresses and ports
// taken until Close.
func New(ctx context.Context, reg *registry.Registry, store storage.Interface, catalog *resource.Catalog, cfg Config, log *slog.Logger) (*Allocator, error) {
	a := &Allocator{registry: reg, store: store, ports: cfg.NodePorts, log: log, rand: rand.New(globalSource{}), ips: newTakenSet(), portsTaken: newTakenSet()}
	if a.ports == (PortRange{}) {
		a.ports = DefaultNodePortRange
	}
	if len(cfg.ClusterIPRanges) == 0 {
		cfg.ClusterIPRanges = []netip.Prefix{DefaultClusterIPRange}
	}
	for _, p := range cfg.ClusterIPRanges {
		a.ranges = append(a.ranges, newIPRange(p))
	}
	a.ipAddresses, _ = catalog.Get("networking.k8s.io", "v1", "ipaddresses")
	a.events, _ = catalog.Get("events.k8s.io", "v1", "events")
	for _, f := range []struct {
		prefix, what string
		set          *takenSet
	}{
		{a.ipAddresses.KeyPrefix(""), "cluster IPs taken", a.ips},
		{NodePortPrefix, "node ports taken", a.portsTaken},
	} {
		follower, err := follow.Start(ctx, store, f.prefix, f.what, f.set.apply(f.prefix), log)
		if err != nil {
			a.Close()
			return nil, err
		}
		a.followers = append(a.followers, follower)
	}
	return a, nil
}

// globalSource is math/rand/v2's global source, safe for concurrent use,
// as a Source; a rand.Rand over it keeps no state of its own.
type globalSource struct{}

func (globalSource) Uint64() uint64 { return rand.Uint64() }

// Close stops following the store.
func (a *Allocator) Close() {
	for _, f := range a.followers {
		f.Close()
	}
}

// FirstIP is the first address of the default family's range, the
// `kubernetes` Service's (kube's GetIndexedIP(range, 1)).
func (a *Allocator) FirstIP() netip.Addr { return a.ranges[0].first }

// ClusterIPRanges are the configured ranges, the default family's first.
func (a *Allocator) ClusterIPRanges() []string {
	out := make([]string, len(a.ranges))
	for i, r := range a.ranges {
		out[i] = r.prefix.String()
	}
	return out
}

// takenSet is the names (addresses, ports) known taken: a hint for the
// search of a free one, kept by a follower and by this server's writes;
// the store's create decides.
type takenSet struct {
	mu    sync.Mutex
	names map[string]bool // guarded by mu
}

func newTakenSet() *takenSet { return &takenSet{names: map[string]bool{}} }

func (s *takenSet) has(name string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.names[name]
}

func (s *takenSet) add(name string) {
	s.mu.Lock()
	s.names[name] = true
	s.mu.Unlock()
}

func (s *takenSet) remove(name string) {
	s.mu.Lock()
	delete(s.names, name)
	s.mu.Unlock()
}

// apply is the follow.Apply of the keys under prefix, each named by the
// rest of its key.
func (s *takenSet) apply(prefix string) follow.Apply {
	return func(key string, _ int64, value []byte) {
		name := strings.TrimPrefix(key, prefix)
		if value == nil {
			s.remove(name)
		} else {
			s.add(name)
		}
	}
}

func isNotFound(err error) bool {
	var se *api.StatusError
	return errors.Is(err, storage.ErrNotFound) || errors.As(err, &se) && se.Status.Reason == api.StatusReasonNotFound
}
