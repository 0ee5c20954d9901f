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

	"github.com/listwatch/listwatch/client/api"
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
	holders := map[string]holder{}  // address -> the Service holding it
	stored := map[string][]string{} // namespace/name of every Service -> its addresses
	err := a.each(ctx, services.KeyPrefix(""), func(kv storage.KV) {
		svc, err := api.ParseObject(kv.Value)
		if err != nil {
			return
		}
		spec, _ := svc["spec"].(map[string]any)
		id := svc.Namespace() + "/" + svc.Name()
		stored[id] = nil
		for _, ip := range api.Strings(spec["clusterIPs"]) {
			held[ip] = true
			if holdsAddress(spec) {
				holders[ip] = holder{kv.Key, id}
				stored[id] = append(stored[id], ip)
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
	var leaked, misfits []api.Object
	misfitHolders := map[string]holder{}
	err = a.each(ctx, a.ipAddresses.KeyPrefix(""), func(kv storage.KV) {
		ip, err := api.ParseObject(kv.Value)
		if err != nil {
			return
		}
		if h, ok := holders[ip.Name()]; ok {
			delete(holders, ip.Name())
			if parentOf(ip) != h.id || !rightLabels(ip) {
				misfits = append(misfits, ip)
				misfitHolders[ip.Name()] = h
			}
		}
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
	for ip, h := range holders {
		note := func(family string) string {
			return fmt.Sprintf("Cluster IP [%s]: %s is not allocated; repairing", family, ip)
		}
		if err := a.remake(ctx, ip, h.key, nil, note); err != nil {
			return err
		}
	}
	for _, ip := range misfits {
		if err := a.rebind(ctx, ip, misfitHolders[ip.Name()], stored); err != nil {
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
		if _, ok := stored[parent]; ok {
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

// holder is a Service holding an address: its key, its namespace/name.
type holder struct{ key, id string }

// parentOf is the namespace/name of the Service an IPAddress names as its
// parent, "" when its parent is not a Service.
func parentOf(ip api.Object) string {
	ref := mapOf(mapOf(ip, "spec"), "parentRef")
	if str(ref, "group") != "" || str(ref, "resource") != "services" {
		return ""
	}
	return str(ref, "namespace") + "/" + str(ref, "name")
}

// rightLabels is kube's verifyIPAddressLabels: the address's family, and
// made by the allocator.
func rightLabels(ip api.Object) bool {
	addr, err := netip.ParseAddr(ip.Name())
	return err == nil && ip.Labels()[labelFamily] == familyOf(addr) && ip.Labels()[labelManagedBy] == ipManager
}

// rebind mends the IPAddress ip of an address the Service h holds, which
// names another parent or lacks the allocator's labels, as kube's
// RepairIPAddress.syncService: made again for h when its parent is not a
// Service, or one that does not hold the address; when its parent holds
// it too, kube's warning that two Services share it; made again, without
// a warning, when only its labels are wrong. stored is every Service's
// addresses.
func (a *Allocator) rebind(ctx context.Context, ip api.Object, h holder, stored map[string][]string) error {
	name, parent := ip.Name(), parentOf(ip)
	wrongRef := func(family string) string {
		return fmt.Sprintf("the ClusterIP [%s]: %s for Service %s has a wrong reference; repairing", family, name, h.id)
	}
	switch {
	case parent == h.id:
		return a.remake(ctx, name, h.key, ip, nil)
	case !slices.Contains(stored[parent], name):
		return a.remake(ctx, name, h.key, ip, wrongRef)
	}
	kv, err := a.store.Get(ctx, h.key)
	if err != nil {
		return nil // deleted since, or to be seen at the next pass
	}
	if svc, err := api.ParseObject(kv.Value); err == nil {
		addr, _ := netip.ParseAddr(name)
		a.warn(ctx, svc, repairAction, "ClusterIPAlreadyAllocated", fmt.Sprintf("Cluster IP [%s]:%s was assigned to multiple services; please recreate service", familyOf(addr), name))
	}
	if !rightLabels(ip) {
		return a.remake(ctx, name, h.key, ip, nil)
	}
	return nil
}

// remake makes the IPAddress of ip for the Service stored at key, which
// held ip when listed, if it still does and ip is of a configured range,
// deleting first stale (the IPAddress there now, if any), as kube's
// recreateIPAddress; note, if set, is kube's ClusterIPNotAllocated warning
// on the Service for the address's family. An address of no range is left
// as it is, with kube's ClusterIPOutOfRange warning.
func (a *Allocator) remake(ctx context.Context, ip, key string, stale api.Object, note func(family string) string) error {
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
	if note != nil {
		a.warn(ctx, svc, repairAction, "ClusterIPNotAllocated", note(family))
	}
	if stale != nil {
		uid := stale.UID()
		_, _, err := a.registry.Delete(registry.Detached(ctx), a.ipAddresses, "", ip, registry.DeleteOptions{Preconditions: registry.Preconditions{UID: &uid}})
		if err != nil && !isNotFound(err) {
			return err
		}
	}
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
