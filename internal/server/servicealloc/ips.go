package servicealloc

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"math/rand/v2"
	"net/netip"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/storage"
)

// The errors of kube's IP allocator (ipallocator/interfaces.go), which its
// Service storage puts in its messages.
var (
	errFull         = errors.New("range is full")
	errIPAllocated  = errors.New("provided IP is already allocated")
	errIPMismatched = errors.New("the provided network does not match the current range")
)

// The labels kube's allocator gives each IPAddress (networking/v1
// LabelIPAddressFamily, LabelManagedBy; ipallocator.ControllerName).
const (
	labelFamily    = "ipaddress.kubernetes.io/ip-family"
	labelManagedBy = "ipaddress.kubernetes.io/managed-by"
	ipManager      = "ipallocator.k8s.io"
)

// allocateIP reserves ip for svc by creating its IPAddress: the store's
// create is the lock, so that of two servers asking for one address, one
// gets errIPAllocated. An ip of no range is kube's errIPMismatched, one of
// a range but not given (the network address) kube's ErrNotInRange.
func (a *Allocator) allocateIP(ctx context.Context, svc api.Object, ip netip.Addr) error {
	r, ok := a.rangeOf(ip)
	if !ok {
		return errIPMismatched
	}
	if !r.contains(ip) {
		return fmt.Errorf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", ip, r.prefix)
	}
	if registry.IsDryRun(ctx) {
		return nil
	}
	return a.createIPAddress(ctx, svc, r, ip)
}

// allocateNextIP reserves a free address of r for svc, as kube's
// allocateNextService: from a random place in the range beyond its offset,
// then in the offset; addresses known taken are skipped, and one another
// server took meanwhile is passed over. A dry run reserves nothing and
// answers the first address known free.
func (a *Allocator) allocateNextIP(ctx context.Context, svc api.Object, r ipRange) (netip.Addr, error) {
	upper := addOffset(r.first, big.NewInt(r.offset))
	if ip, err := a.allocateIn(ctx, svc, r, upper, r.last); !errors.Is(err, errFull) || r.offset == 0 {
		return ip, err
	}
	return a.allocateIn(ctx, svc, r, r.first, upper.Prev())
}

// allocateIn is allocateNextIP within lo..hi.
func (a *Allocator) allocateIn(ctx context.Context, svc api.Object, r ipRange, lo, hi netip.Addr) (netip.Addr, error) {
	n := new(big.Int).SetBytes(hi.AsSlice())
	n.Sub(n, new(big.Int).SetBytes(lo.AsSlice())).Add(n, big.NewInt(1))
	start := addOffset(lo, randBelow(a.rand, n))
	ip := start
	for {
		if !a.ips.has(ip.String()) {
			if registry.IsDryRun(ctx) {
				return ip, nil
			}
			err := a.createIPAddress(ctx, svc, r, ip)
			if err == nil {
				return ip, nil
			}
			if !errors.Is(err, errIPAllocated) {
				return netip.Addr{}, err
			}
		}
		if ip = ip.Next(); ip.Compare(hi) > 0 {
			ip = lo
		}
		if ip == start {
			return netip.Addr{}, errFull
		}
	}
}

// randBelow is a random number in [0, n), n > 0, of at most 64 bits: as
// kube's allocator, a search of a range wider than that starts in its
// first 2^64 addresses.
func randBelow(r *rand.Rand, n *big.Int) *big.Int {
	if n.IsUint64() {
		return new(big.Int).SetUint64(r.Uint64N(n.Uint64()))
	}
	return new(big.Int).SetUint64(r.Uint64())
}

// createIPAddress creates ip's IPAddress, as kube's allocator does, with
// svc as its parent.
func (a *Allocator) createIPAddress(ctx context.Context, svc api.Object, r ipRange, ip netip.Addr) error {
	obj := api.Object{
		"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
		"metadata": map[string]any{"name": ip.String(), "labels": map[string]any{labelFamily: r.family(), labelManagedBy: ipManager}},
		"spec": map[string]any{"parentRef": map[string]any{
			"group": "", "resource": "services", "namespace": svc.Namespace(), "name": svc.Name(),
		}},
	}
	_, err := a.registry.Create(registry.Detached(ctx), a.ipAddresses, "", obj)
	if errors.Is(err, storage.ErrKeyExists) {
		a.ips.add(ip.String())
		return errIPAllocated
	}
	if err != nil {
		return err
	}
	a.ips.add(ip.String())
	return nil
}

// releaseIP deletes ip's IPAddress; releasing one that is gone does nothing.
func (a *Allocator) releaseIP(ip string) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	_, _, err := a.registry.Delete(ctx, a.ipAddresses, "", ip, registry.DeleteOptions{})
	if err != nil && !isNotFound(err) {
		a.log.Warn("releasing a cluster IP", "ip", ip, "err", err)
		return
	}
	a.ips.remove(ip)
}

// rangeOf is the configured range whose prefix holds ip.
func (a *Allocator) rangeOf(ip netip.Addr) (ipRange, bool) {
	for _, r := range a.ranges {
		if r.prefix.Contains(ip) {
			return r, true
		}
	}
	return ipRange{}, false
}

// rangeFor is the configured range of family, if any.
func (a *Allocator) rangeFor(family string) (ipRange, bool) {
	for _, r := range a.ranges {
		if r.family() == family {
			return r, true
		}
	}
	return ipRange{}, false
}
