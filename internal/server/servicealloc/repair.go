package servicealloc

import (
	"context"
	"encoding/json"
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
// kube's repair controllers free them. services is the Service resource,
// whose objects are read from the store.
func (a *Allocator) Repair(ctx context.Context, services *resource.Resource, now time.Time) error {
	held := map[string]bool{}
	err := a.each(ctx, services.KeyPrefix(""), func(kv storage.KV) {
		svc, err := api.ParseObject(kv.Value)
		if err != nil {
			return
		}
		spec, _ := svc["spec"].(map[string]any)
		for _, ip := range api.Strings(spec["clusterIPs"]) {
			held[ip] = true
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
		if err != nil || held[ip.Name()] || ip.Labels()[labelManagedBy] != ipManager {
			return
		}
		if created, _ := time.Parse(time.RFC3339, ip.MetaString("creationTimestamp")); old(created) {
			leaked = append(leaked, ip)
		}
	})
	if err != nil {
		return err
	}
	for _, ip := range leaked {
		uid := ip.UID()
		_, _, err := a.registry.Delete(registry.Detached(ctx), a.ipAddresses, "", ip.Name(), registry.DeleteOptions{Preconditions: registry.Preconditions{UID: &uid}})
		if err != nil && !isNotFound(err) {
			return err
		}
		a.log.Info("freed a cluster IP no Service holds", "ip", ip.Name())
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
