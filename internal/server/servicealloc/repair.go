package servicealloc

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// RepairGrace is how old an allocation must be before Repair frees it for
// want of a Service holding it: longer than any write takes between its
// allocation and its store write (admission webhooks included), so that
// an allocation in flight is never taken for a leak.
const RepairGrace = 5 * time.Minute

// repairPage bounds each page Repair lists.
const repairPage = 500

// Repair frees the addresses and node ports that no stored Service holds
// and that were taken more than RepairGrace before now: those of a write
// whose server stopped between its allocation and its store write, as
// kube's repair controllers free them. It makes again the IPAddress of an
// address a Service holds that has none (deleted by hand, or lost to a
// restore), as kube's RepairIPAddress does, so that the address is not
// given twice. services is the Service resource, whose objects are read
// from the store.
func (a *Allocator) Repair(ctx context.Context, services *resource.Resource, now time.Time) error {
	held := map[string]bool{}
	holders := map[string]string{} // address -> the key of the Service holding it
	stored := map[string]bool{}    // namespace/name of every Service
	err := a.each(ctx, services.KeyPrefix(""), func(kv storage.KV) {
		svc, err := api.ParseObject(kv.Value)
		if err != nil {
			return
		}
		stored[svc.Namespace()+"/"+svc.Name()] = true
		spec, _ := svc["spec"].(map[string]any)
		for _, ip := range api.Strings(spec["clusterIPs"]) {
			held[ip] = true
			if holdsAddress(spec) {
				holders[ip] = kv.Key
			}
		}
		for _, p := range append(nodePortsOf(spec), intOf(spec["healthCheckNodePort"])) {
			held[strconv.Itoa(p)] = true
		}
	})
	if err != nil {
		return err
	}
	old := func(created time.Time) bool { return !created.IsZero() && now.Sub(created) > RepairGrace }
	var leaked []api.Object
	err = a.each(ctx, a.ipAddresses.KeyPrefix(""), func(kv storage.KV) {
		ip, err := api.ParseObject(kv.Value)
		if err != nil {
			return
		}
		delete(holders, ip.Name())
		if held[ip.Name()] || ip.Labels()[labelManagedBy] != ipManager {
			return
		}
		if created, _ := time.Parse(time.RFC3339, ip.MetaString("creationTimestamp")); old(created) {
			leaked = append(leaked, ip)
		}
	})
	if err != nil {
		return err
	}
	for ip, key := range holders {
		if err := a.reallocate(ctx, ip, key); err != nil {
			return err
		}
	}
	for _, ip := range leaked {
		uid := ip.UID()
		_, _, err := a.registry.Delete(registry.Detached(ctx), a.ipAddresses, "", ip.Name(), registry.DeleteOptions{Preconditions: registry.Preconditions{UID: &uid}})
		if err != nil && !isNotFound(err) {
			return err
		}
		a.log.Info("freed a cluster IP no Service holds", "ip", ip.Name())
		ref := mapOf(mapOf(ip, "spec"), "parentRef")
		parent := str(ref, "namespace") + "/" + str(ref, "name")
		if stored[parent] {
			a.warn(ctx, ip, "IPAddressAllocation", "IPAddressWrongReference", fmt.Sprintf("IPAddress: %s for Service %s has a wrong reference; cleaning up", ip.Name(), parent))
		} else {
			a.warn(ctx, ip, "IPAddressAllocation", "IPAddressNotAllocated", fmt.Sprintf("IPAddress: %s for Service %s appears to have leaked: cleaning up", ip.Name(), parent))
		}
	}
	return a.each(ctx, NodePortPrefix, func(kv storage.KV) {
		port := strings.TrimPrefix(kv.Key, NodePortPrefix)
		var h portHolder
		if held[port] || json.Unmarshal(kv.Value, &h) != nil || !old(h.Created) {
			return
		}
		if _, _, err := a.store.Delete(ctx, kv.Key, kv.ModRevision); err == nil {
			a.log.Info("freed a node port no Service holds", "port", port)
		}
	})
}

// each calls f with every KV under prefix, a page at a time.
func (a *Allocator) each(ctx context.Context, prefix string, f func(storage.KV)) error {
	opts := storage.ListOptions{Limit: repairPage}
	for {
		page, err := a.store.List(ctx, prefix, opts)
		if err != nil {
			return err
		}
		for _, kv := range page.KVs {
			f(kv)
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

// reallocate makes the IPAddress of ip, which the Service stored at key
// held without one when listed, if it still does and ip is of a
// configured range: with kube's warning on the Service (RepairIPAddress's
// ClusterIPNotAllocated, or ClusterIPOutOfRange for an address of no
// range, which is left as it is).
func (a *Allocator) reallocate(ctx context.Context, ip, key string) error {
	kv, err := a.store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil // deleted since: its address was freed with it
	}
	if err != nil {
		return err
	}
	svc, err := api.ParseObject(kv.Value)
	spec, _ := svc["spec"].(map[string]any)
	if err != nil || !holdsAddress(spec) || !slices.Contains(api.Strings(spec["clusterIPs"]), ip) {
		return nil
	}
	addr, err := netip.ParseAddr(ip)
	if err != nil {
		return nil // validation keeps such an address out
	}
	family := familyOf(addr)
	r, ok := a.rangeOf(addr)
	if !ok || !r.contains(addr) {
		a.warn(ctx, svc, repairAction, "ClusterIPOutOfRange", fmt.Sprintf("Cluster IP [%s]: %s is not within any configured Service CIDR; please recreate service", family, ip))
		return nil
	}
	a.warn(ctx, svc, repairAction, "ClusterIPNotAllocated", fmt.Sprintf("Cluster IP [%s]: %s is not allocated; repairing", family, ip))
	if err := a.createIPAddress(ctx, svc, r, addr); errors.Is(err, errIPAllocated) {
		return nil // made meanwhile
	} else if err != nil {
		return err
	}
	a.log.Info("made again the IPAddress of a Service's cluster IP", "ip", ip, "service", svc.Namespace()+"/"+svc.Name())
	return nil
}

// The reporter of kube's repair events (ipallocator/controller,
// repairip.go) and its action on a Service's address.
const (
	repairController = "ipallocator-repair-controller"
	repairAction     = "ClusterIPAllocation"
)

// warn records a Warning Event on the stored object regarding as kube's
// repair controller's events recorder writes it (client-go tools/events
// makeEvent: in the object's namespace, else default); a failure to
// write it is logged, not returned, as kube's recorder drops it.
func (a *Allocator) warn(ctx context.Context, regarding api.Object, action, reason, note string) {
	now := time.Now()
	host, _ := os.Hostname()
	ns := cmp.Or(regarding.Namespace(), "default")
	ref := map[string]any{"kind": regarding.Kind(), "apiVersion": regarding.APIVersion(), "name": regarding.Name(),
		"uid": regarding.UID(), "resourceVersion": regarding.ResourceVersion()}
	if regarding.Namespace() != "" {
		ref["namespace"] = regarding.Namespace()
	}
	event := api.Object{
		"apiVersion": "events.k8s.io/v1", "kind": "Event",
		"metadata":            map[string]any{"name": fmt.Sprintf("%s.%x", regarding.Name(), now.UnixNano()), "namespace": ns},
		"eventTime":           api.NewMicroTime(now),
		"reportingController": repairController,
		"reportingInstance":   repairController + "-" + host,
		"action":              action,
		"reason":              reason,
		"regarding":           ref,
		"note":                note,
		"type":                "Warning",
	}
	if _, err := a.registry.Create(registry.Detached(ctx), a.events, ns, event); err != nil {
		a.log.Warn("recording a repair event", "reason", reason, "err", err)
	}
}
