package server

import (
	"context"
	"errors"
	"hash/fnv"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
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

// quotaInflight counts, by namespace, the writes whose quota charge is
// written and whose own write has not ended: until it ends, the leader's
// recompute cannot tell a charge for an object yet to be stored from one
// it should give back, and must not lower the namespace's usage.
type quotaInflight struct {
	mu sync.Mutex
	n  map[string]int // guarded by mu
}

// add adds d to ns's count.
func (f *quotaInflight) add(ns string, d int) {
	if d == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n == nil {
		f.n = map[string]int{}
	}
	if f.n[ns] += d; f.n[ns] == 0 {
		delete(f.n, ns)
	}
}

// busy says whether ns has a charged write in flight.
func (f *quotaInflight) busy(ns string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n[ns] > 0
}

// errQuotaBusy is a recompute that kept a usage it would have lowered,
// for a write in flight: the leader looks at the quota again.
var errQuotaBusy = errors.New("a charged write is in flight")

// quotaResync is how often the leader recomputes every quota's usage
// (kube's --resource-quota-sync-period is 5 minutes); quotaPoll how often
// it looks at the namespaces whose quotas' hard changed or that watch
// events marked (creates, deletes, updates of pods, services and claims).
const (
	quotaResync = 10 * time.Second
	quotaPoll   = time.Second
)

// quotaWritten is the highest revision of a ResourceQuota written
// through this server: a write waits for the quotas' cache to reach it,
// so that a quota is enforced from the next write after its create (kube
// looks a namespace's quotas up live when its cache has none).
type quotaWritten struct{ rev atomic.Int64 }

// note records the revision of obj, if it is a ResourceQuota.
func (w *quotaWritten) note(res *resource.Resource, obj api.Object) {
	if res.Group != "" || res.Plural != "resourcequotas" {
		return
	}
	rev, err := registry.ParseResourceVersion(obj.ResourceVersion())
	for err == nil {
		cur := w.rev.Load()
		if rev <= cur || w.rev.CompareAndSwap(cur, rev) {
			return
		}
	}
}

// quotaObjects are the ResourceQuotas of a namespace in the cache, once
// it holds those written through this server.
func (s *Server) quotaObjects(ctx context.Context, ns string) ([]*watchcache.Object, error) {
	res, _ := s.catalog.Get("", "v1", "resourcequotas")
	c, err := s.readyCache(ctx, res)
	if c == nil || err != nil {
		return nil, err
	}
	if rev := s.quotaWritten.rev.Load(); rev > c.Revision() { // a write need not make waitFresh's timer
		if err := s.waitFresh(ctx, c, rev); err != nil {
			return nil, err
		}
	}
	objs, _ := c.List(watchcache.Filter{Namespace: ns})
	return objs, nil
}

// mayChargeQuota says whether a write in ns may be charged: the
// namespace has quotas, or looking them up failed (the charge says why).
func (s *Server) mayChargeQuota(ctx context.Context, ns string) bool {
	if len(s.cfg.QuotaLimited) > 0 {
		return true // what is limited needs a quota
	}
	objs, err := s.quotaObjects(ctx, ns)
	return len(objs) > 0 || err != nil
}

// chargeQuota charges a's write to its namespace's quotas; charged says
// whether a charge was written, which leaves the namespace's in-flight
// count raised for the caller to lower when the write ends.
func (s *Server) chargeQuota(ctx context.Context, a *webhook.Attributes) (charged bool, _ error) {
	if a.Namespace == "" || a.Object == nil {
		return false, nil
	}
	w := quota.Write{Op: a.Operation, Group: a.Resource.Group, Plural: a.Resource.Resource, Subresource: a.Subresource, Object: a.Object, Old: a.OldObject}
	if !quota.Handles(w) { // an update of a ConfigMap, say: no turn to take
		return false, nil
	}
	cached, err := s.quotaObjects(ctx, a.Namespace)
	switch {
	case err != nil:
		return false, err
	case len(cached) == 0 && len(s.cfg.QuotaLimited) == 0:
		return false, nil
	case len(cached) == 0: // nothing to charge, what is limited to refuse
		_, err := s.checkQuota(a, nil, w)
		return false, err
	}
	unlock, err := s.quotaLocks.lock(ctx, a.Namespace)
	if err != nil {
		return false, err
	}
	defer unlock()
	// Raised before the first charge is written, so that a recompute that
	// reads the charged quota sees it raised.
	s.quotaInflight.add(a.Namespace, 1)
	defer func() {
		if !charged {
			s.quotaInflight.add(a.Namespace, -1)
		}
	}()
	if cached, err = s.quotaObjects(ctx, a.Namespace); err != nil { // as the last charge left them, if the cache has it
		return false, err
	}
	res, _ := s.catalog.Get("", "v1", "resourcequotas")
	quotas := make([]quota.Quota, 0, len(cached))
	for _, o := range cached {
		if obj, err := o.Obj(); err == nil {
			quotas = append(quotas, quota.Parse(obj))
		}
	}
	written := map[string]bool{}
	for range quotaRetries {
		changed, err := s.checkQuota(a, quotas, w)
		if err != nil || a.DryRun || len(changed) == 0 {
			return false, err
		}
		conflict := false
		for _, q := range changed {
			err := s.writeQuotaUsed(ctx, a.Namespace, q)
			if isReason(err, api.StatusReasonConflict) {
				conflict = true
				break
			}
			if err != nil {
				return charged, err
			}
			charged = true
			written[q.Name] = true
		}
		if !conflict {
			return charged, nil
		}
		// Another write charged a quota meanwhile: charge its usage, and
		// only the quotas not charged yet (kube retries the failed ones).
		list, err := s.registry.List(registry.Detached(ctx), res, a.Namespace, registry.ListOptions{})
		if err != nil {
			return charged, err
		}
		quotas = quotas[:0]
		for _, obj := range list.Items {
			if !written[obj.Name()] {
				quotas = append(quotas, quota.Parse(obj))
			}
		}
	}
	return charged, apierror.Internal(errors.New("resource quota evaluation timed out"))
}

// checkQuota is quota.Check of a's write w, with kube's answers.
func (s *Server) checkQuota(a *webhook.Attributes, quotas []quota.Quota, w quota.Write) ([]quota.Quota, error) {
	changed, err := quota.Check(quotas, w, s.cfg.QuotaLimited, time.Now())
	var refused *quota.Refused
	var uncovered *quota.Uncovered
	switch {
	case errors.As(err, &refused):
		return nil, plugins.Forbidden(a, refused.Reason)
	case errors.As(err, &uncovered): // kube's error without a Status: 500, no reason
		return nil, &api.StatusError{Status: api.NewStatus(http.StatusInternalServerError, "", uncovered.Error())}
	case err != nil:
		return nil, apierror.Internal(err)
	}
	return changed, nil
}

// writeQuotaUsed writes a quota's status.used if it is still at the
// revision it was read at (a 409 otherwise), as the server's own write.
func (s *Server) writeQuotaUsed(ctx context.Context, ns string, q quota.Quota) error {
	return s.writeQuotaStatus(ctx, ns, q.Name, q.ResourceVersion, func(obj api.Object) {
		status, _ := obj["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
			obj["status"] = status
		}
		status["used"] = quota.Encode(q.Used)
	})
}

// writeQuotaStatus writes the status set makes of a quota's, if the quota
// is still at revision rv (a 409 otherwise), as the server's own write;
// the next charges wait for the cache to hold it.
func (s *Server) writeQuotaStatus(ctx context.Context, ns, name, rv string, set func(api.Object)) error {
	res, _ := s.catalog.Get("", "v1", "resourcequotas")
	w, err := s.registry.Update(registry.Detached(ctx), partView(res), ns, name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		set(next)
		next.Metadata()["resourceVersion"] = rv
		return next, nil
	})
	if err == nil {
		s.quotaWritten.note(res, w.Object)
	}
	return err
}

// keepQuotas is the leader's resourcequota controller: the quotas of a
// namespace where a quota's status.hard is not its spec.hard, or that
// watch events marked (a create, a delete, a pod that finished), get both
// hard and used at once; every quota its usage every quotaResync.
func (s *Server) keepQuotas(ctx context.Context) {
	t := time.NewTicker(quotaPoll)
	defer t.Stop()
	f := newQuotaFollow(s)
	defer f.stop()
	var last time.Time
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
		s.lookAtQuotas(ctx, all, f)
	}
}

// lookAtQuotas is one look of keepQuotas: at every namespace's quotas if
// all, else at those of the namespaces where a quota's hard changed or f
// marked a change of the objects its quotas count. A namespace due for a
// recompute lists each resource its quotas count once, and each object
// is decoded once for all its namespace's quotas.
func (s *Server) lookAtQuotas(ctx context.Context, all bool, f *quotaFollow) {
	cached, _ := s.quotaObjects(ctx, "") // none if the server's own writes are not in yet
	byNS := map[string][]api.Object{}
	for _, o := range cached {
		if obj, err := o.Obj(); err == nil {
			byNS[obj.Namespace()] = append(byNS[obj.Namespace()], obj)
		}
	}
	counted := map[string][][2]string{} // by namespace
	resources := map[[2]string]bool{}
	for ns, objs := range byNS {
		seen := map[[2]string]bool{}
		for _, obj := range objs {
			for _, gr := range quota.Resources(quota.Read(mapAt(obj, "spec"), "hard"), s.servesNamespaced) {
				if !seen[gr] {
					seen[gr] = true
					counted[ns] = append(counted[ns], gr)
					resources[gr] = true
				}
			}
		}
	}
	f.follow(ctx, resources)
	changed := f.take(counted)
	var due []string
	for ns, objs := range byNS {
		if all || changed[ns] || slices.ContainsFunc(objs, func(obj api.Object) bool {
			return !quota.Equal(quota.Read(mapAt(obj, "spec"), "hard"), quota.Read(mapAt(obj, "status"), "hard"))
		}) {
			due = append(due, ns)
		}
	}
	if len(due) == 0 {
		return
	}
	// Asked after the quotas were read and before the store's revision: a
	// charge they hold whose write has ended since is counted.
	busy := map[string]bool{}
	for _, ns := range due {
		busy[ns] = s.quotaInflight.busy(ns)
	}
	// Count what the store holds now, not what a cache has yet to see: a
	// write charged since would be given back.
	rev, revErr := s.registry.Storage().CurrentRevision(ctx)
	look := &quotaLook{s: s, rev: rev, caches: map[[2]string]*watchcache.Cache{}, now: time.Now()}
	for _, ns := range due {
		err := revErr
		if err == nil {
			err = look.sync(ctx, ns, byNS[ns], counted[ns], busy[ns])
		}
		if err == nil {
			continue
		}
		// Look again next time (a conflict with a charge too: the
		// give-back of a delete must not wait for quotaResync).
		f.mark(ns)
		if ctx.Err() == nil && !isReason(err, api.StatusReasonConflict) && err != errQuotaBusy {
			s.log.Warn("resource quota: computing a namespace's usage", "namespace", ns, "err", err)
		}
	}
}

// quotaLook is one recompute of namespaces' quotas, at revision rev.
type quotaLook struct {
	s      *Server
	rev    int64
	caches map[[2]string]*watchcache.Cache // those at rev
	now    time.Time
}

// cache is a resource's cache once it reflects rev, nil if none.
func (l *quotaLook) cache(ctx context.Context, gr [2]string) (*watchcache.Cache, error) {
	if c, ok := l.caches[gr]; ok {
		return c, nil
	}
	c, err := l.s.readyCache(ctx, l.s.servedResource(gr[0], gr[1]))
	if c == nil || err != nil {
		return nil, err
	}
	if err := l.s.waitFresh(ctx, c, l.rev); err != nil {
		return nil, err
	}
	l.caches[gr] = c
	return c, nil
}

// sync sets the status.hard of a namespace's quotas (objs) to their
// spec.hard and status.used to what the namespace's objects of resources
// use, for each quota unless a write changed it since (a conflict);
// busy keeps every usage it would lower (errQuotaBusy).
func (l *quotaLook) sync(ctx context.Context, ns string, objs []api.Object, resources [][2]string, busy bool) error {
	quotas := make([]quota.Quota, len(objs))
	for i, obj := range objs {
		quotas[i] = quota.Parse(obj)
		quotas[i].Hard = quota.Read(mapAt(obj, "spec"), "hard")
	}
	for _, gr := range resources {
		c, err := l.cache(ctx, gr)
		if c == nil || err != nil {
			return err
		}
		cached, _ := c.List(watchcache.Filter{Namespace: ns})
		raw := make([][]byte, len(cached)) // only their number, unless read
		if quota.ReadsObjects(gr[0], gr[1]) {
			for i, o := range cached {
				raw[i] = o.JSON
			}
		}
		usage, err := quota.Usage(quotas, gr[0], gr[1], raw, l.now)
		if err != nil {
			return err
		}
		for i := range quotas {
			maps.Copy(quotas[i].Used, usage[i])
		}
	}
	var first error
	for i, obj := range objs {
		if err := l.s.writeQuotaSync(ctx, obj, quotas[i], busy); first == nil {
			first = err
		}
	}
	return first
}

// writeQuotaSync writes a quota's status: q's hard, and q's used of it
// (the usage obj's status holds where it is higher, if busy), unless
// the quota changed since obj was read.
func (s *Server) writeQuotaSync(ctx context.Context, obj api.Object, q quota.Quota, busy bool) error {
	hard, used := q.Hard, q.Used
	for name := range used {
		if _, ok := hard[name]; !ok {
			delete(used, name)
		}
	}
	status := mapAt(obj, "status")
	kept := false
	if busy {
		for name, was := range quota.Read(status, "used") {
			if u, ok := used[name]; ok && u.Cmp(was) < 0 {
				used[name], kept = was, true
			}
		}
	}
	var err error
	if !quota.Equal(hard, quota.Read(status, "hard")) || !quota.Equal(used, quota.Read(status, "used")) {
		err = s.writeQuotaStatus(ctx, obj.Namespace(), obj.Name(), obj.ResourceVersion(), func(next api.Object) {
			next["status"] = map[string]any{"hard": quota.Encode(hard), "used": quota.Encode(used)}
		})
	}
	if err == nil && kept {
		return errQuotaBusy
	}
	return err
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
