package server

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/plugins"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// ResourceQuota, as kube-apiserver's admission plugin and
// kube-controller-manager's resourcequota controller: a write is charged
// to its namespace's quotas last in the admission chain, each quota's
// status.used raised by a write conditional on the revision it was read
// at (read again from the store and charged again on a conflict); the
// leader keeps each quota's status.hard its spec.hard and recomputes
// status.used from the watch caches, at once for a quota whose hard
// changed or whose namespace gained or lost objects it counts (a delete
// gives its share back), and every quotaResync for all.

// quotaRetries bounds the charges of one write that meet a concurrent
// change of a quota (by another server or the leader's recompute: this
// server's charges in a namespace take turns).
const quotaRetries = 5

// quotaLockStripes is how many locks the namespaces' charges share.
const quotaLockStripes = 64

// quotaLocks make the charges of one namespace's writes take turns, as
// kube's quota admission works through a namespace's writes one batch
// at a time, so that concurrent writes do not fail each other's
// conditional status writes; namespaces share quotaLockStripes locks,
// each a one-slot channel so that a waiting write can give up when its
// request ends.
type quotaLocks struct {
	once  sync.Once
	slots [quotaLockStripes]chan struct{}
}

// lock takes ns's stripe and returns its unlock, or kube's 504 if ctx
// ends first.
func (l *quotaLocks) lock(ctx context.Context, ns string) (func(), error) {
	l.once.Do(func() {
		for i := range l.slots {
			l.slots[i] = make(chan struct{}, 1)
		}
	})
	h := fnv.New32a()
	h.Write([]byte(ns))
	slot := l.slots[h.Sum32()%quotaLockStripes]
	select {
	case slot <- struct{}{}:
		return func() { <-slot }, nil
	case <-ctx.Done():
		return nil, apierror.Timeout("Timeout: request did not complete within requested timeout - "+ctx.Err().Error(), 0)
	}
}

// quotaResync is how often the leader recomputes every quota's usage
// (kube's --resource-quota-sync-period is 5 minutes, and its controller
// follows deletes and finished pods as they happen); quotaPoll how often
// it looks for quotas whose hard or objects' numbers changed.
const (
	quotaResync = 10 * time.Second
	quotaPoll   = time.Second
)

// quotaObjects are the ResourceQuotas of a namespace in the cache.
func (s *Server) quotaObjects(ctx context.Context, ns string) []*watchcache.Object {
	res, _ := s.catalog.Get("", "v1", "resourcequotas")
	c, err := s.readyCache(ctx, res)
	if c == nil || err != nil {
		return nil
	}
	objs, _ := c.List(watchcache.Filter{Namespace: ns})
	return objs
}

// chargeQuota charges a's write to its namespace's quotas.
func (s *Server) chargeQuota(ctx context.Context, a *webhook.Attributes) error {
	if a.Namespace == "" || a.Object == nil || a.Subresource != "" {
		return nil
	}
	if len(s.quotaObjects(ctx, a.Namespace)) == 0 {
		return nil
	}
	unlock, err := s.quotaLocks.lock(ctx, a.Namespace)
	if err != nil {
		return err
	}
	defer unlock()
	cached := s.quotaObjects(ctx, a.Namespace) // as the last charge left them, if the cache has it
	res, _ := s.catalog.Get("", "v1", "resourcequotas")
	quotas := make([]quota.Quota, 0, len(cached))
	for _, o := range cached {
		if obj, err := o.Obj(); err == nil {
			quotas = append(quotas, quota.Parse(obj))
		}
	}
	w := quota.Write{Op: a.Operation, Group: a.Resource.Group, Plural: a.Resource.Resource, Object: a.Object, Old: a.OldObject}
	for range quotaRetries {
		changed, err := quota.Check(quotas, w, time.Now())
		var refused *quota.Refused
		switch {
		case errors.As(err, &refused):
			return plugins.Forbidden(a, refused.Reason)
		case err != nil:
			return apierror.Internal(err)
		case a.DryRun || len(changed) == 0:
			return nil
		}
		conflict := false
		for _, q := range changed {
			err := s.writeQuotaUsed(ctx, res, a.Namespace, q)
			if isReason(err, api.StatusReasonConflict) {
				conflict = true
				break
			}
			if err != nil {
				return err
			}
		}
		if !conflict {
			return nil
		}
		// Another write charged a quota meanwhile: charge its usage.
		list, err := s.registry.List(registry.Detached(ctx), res, a.Namespace, registry.ListOptions{})
		if err != nil {
			return err
		}
		quotas = quotas[:0]
		for _, obj := range list.Items {
			quotas = append(quotas, quota.Parse(obj))
		}
	}
	return apierror.Internal(errors.New("resource quota evaluation timed out"))
}

// writeQuotaUsed writes a quota's status.used if it is still at the
// revision it was read at (a 409 otherwise), as the server's own write.
func (s *Server) writeQuotaUsed(ctx context.Context, res *resource.Resource, ns string, q quota.Quota) error {
	_, err := s.registry.Update(registry.Detached(ctx), statusView(res), ns, q.Name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		status, _ := next["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
			next["status"] = status
		}
		status["used"] = quota.Encode(q.Used)
		next.Metadata()["resourceVersion"] = q.ResourceVersion
		return next, nil
	})
	return err
}

// keepQuotas is the leader's resourcequota controller: a quota whose
// status.hard is not its spec.hard, or whose namespace holds another
// number of the objects it counts than at the last look (a create or a
// delete), gets both hard and used at once; every quota its usage every
// quotaResync (what an update changes: a pod that finished).
func (s *Server) keepQuotas(ctx context.Context) {
	t := time.NewTicker(quotaPoll)
	defer t.Stop()
	var last time.Time
	// counts are, by quota and resource, the number of the resource's
	// objects in the quota's namespace at the last look.
	counts := map[string]int{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		all := time.Since(last) >= quotaResync
		if all {
			last = time.Now()
		}
		seen := make(map[string]int, len(counts))
		for _, o := range s.quotaObjects(ctx, "") {
			obj, err := o.Obj()
			if err != nil {
				continue
			}
			hard := quota.Read(mapAt(obj, "spec"), "hard")
			sync := all || !quota.Equal(hard, quota.Read(mapAt(obj, "status"), "hard"))
			var keys []string
			for _, gr := range quota.Resources(hard, s.servesNamespaced) {
				key := o.Key + " " + gr[0] + "/" + gr[1]
				keys = append(keys, key)
				if c := s.caches.get(s.servedResource(gr[0], gr[1])); c != nil {
					objs, _ := c.List(watchcache.Filter{Namespace: obj.Namespace()})
					seen[key] = len(objs)
				}
				if prev, ok := counts[key]; !ok || prev != seen[key] {
					sync = true
				}
			}
			if !sync {
				continue
			}
			err = s.syncQuota(ctx, obj)
			if err == nil {
				continue
			}
			// Forget the counts this quota was not brought up to, so
			// that the next look retries it (a conflict with a charge
			// too: the give-back of a delete must not wait for
			// quotaResync).
			for _, key := range keys {
				delete(seen, key)
			}
			if ctx.Err() == nil && !isReason(err, api.StatusReasonConflict) {
				s.log.Warn("resource quota: computing a quota's usage", "namespace", obj.Namespace(), "name", obj.Name(), "err", err)
			}
		}
		counts = seen
	}
}

// servesNamespaced says whether a group's namespaced resource is served.
func (s *Server) servesNamespaced(group, plural string) bool {
	res := s.servedResource(group, plural)
	return res != nil && res.Namespaced
}

// servedResource is a served version of a group's resource (its
// objects are those of every version), nil if none is.
func (s *Server) servedResource(group, plural string) *resource.Resource {
	for _, r := range s.catalog.All() {
		if r.Group == group && r.Plural == plural && !r.CreateOnly {
			return r
		}
	}
	return nil
}

// mapAt is the object m[key], nil if it is not one.
func mapAt(m map[string]any, key string) map[string]any {
	v, _ := m[key].(map[string]any)
	return v
}

// syncQuota sets a quota's status.hard to its spec.hard and status.used
// to what its namespace's objects use, unless a write changed it since.
func (s *Server) syncQuota(ctx context.Context, obj api.Object) error {
	q := quota.Parse(obj)
	hard := quota.Read(mapAt(obj, "spec"), "hard")
	q.Hard = hard
	used := q.Used
	ns := obj.Namespace()
	now := time.Now()
	// Count what the store holds now, not what a cache has yet to see: a
	// write charged since would be given back.
	rev, err := s.registry.Storage().CurrentRevision(ctx)
	if err != nil {
		return err
	}
	for _, gr := range quota.Resources(hard, s.servesNamespaced) {
		c, err := s.readyCache(ctx, s.servedResource(gr[0], gr[1]))
		if c == nil || err != nil {
			return err
		}
		if err := waitCacheFresh(ctx, c, rev); err != nil {
			return err
		}
		cached, _ := c.List(watchcache.Filter{Namespace: ns})
		objs := make([]api.Object, len(cached))
		if quota.ReadsObjects(gr[0], gr[1]) {
			for i, o := range cached {
				if objs[i], err = o.Obj(); err != nil {
					return err
				}
			}
		}
		u, err := quota.Usage(q, gr[0], gr[1], objs, now)
		if err != nil {
			return err
		}
		maps.Copy(used, u)
	}
	for name := range used {
		if _, ok := hard[name]; !ok {
			delete(used, name)
		}
	}
	status := mapAt(obj, "status")
	if quota.Equal(hard, quota.Read(status, "hard")) && quota.Equal(used, quota.Read(status, "used")) {
		return nil
	}
	res, _ := s.catalog.Get("", "v1", "resourcequotas")
	_, err = s.registry.Update(registry.Detached(ctx), statusView(res), ns, obj.Name(), func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		next["status"] = map[string]any{"hard": quota.Encode(hard), "used": quota.Encode(used)}
		next.Metadata()["resourceVersion"] = obj.ResourceVersion()
		return next, nil
	})
	return err
}
