package gc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// Propagation policies, as DeleteOptions names them.
const (
	policyBackground = "Background"
	policyForeground = "Foreground"
	policyOrphan     = "Orphan"
)

// objectMeta is what the collector reads of an object.
type objectMeta struct {
	Metadata struct {
		Name              string     `json:"name"`
		Namespace         string     `json:"namespace"`
		UID               string     `json:"uid"`
		OwnerReferences   []ownerRef `json:"ownerReferences"`
		Finalizers        []string   `json:"finalizers"`
		DeletionTimestamp *string    `json:"deletionTimestamp"`
	} `json:"metadata"`
	rv string // the stored revision
}

// parseMeta reads an object's metadata, decoding only the metadata member
// (an object's data may be a thousand times larger) unless the object is
// written in a way that member finder does not follow.
func parseMeta(b []byte) (objectMeta, error) {
	var m objectMeta
	if md, ok := registry.Metadata(b); ok {
		return m, json.Unmarshal(md, &m.Metadata)
	}
	return m, json.Unmarshal(b, &m)
}

func (m objectMeta) has(finalizer string) bool {
	return slices.Contains(m.Metadata.Finalizers, finalizer)
}

// event returns the upsert of m, an object of res.
func (m objectMeta) event(res *resource.Resource) *event {
	md := m.Metadata
	deleting := md.DeletionTimestamp != nil
	return &event{
		typ:    upsert,
		id:     identity{APIVersion: res.APIVersion(), Kind: res.Kind, Namespace: md.Namespace, Name: md.Name, UID: md.UID},
		owners: md.OwnerReferences, beingDeleted: deleting,
		orphan: deleting && m.has(registry.OrphanFinalizer), foreground: deleting && m.has(registry.ForegroundFinalizer),
	}
}

// mappingError: the catalogue serves no resource of an apiVersion and kind
// (kube's restMappingError); it may later, so the item is retried.
type mappingError struct{ apiVersion, kind string }

func (e *mappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s/%s", e.apiVersion, e.kind)
}

// kinds maps apiVersion and kind to the served resource, rebuilt when the
// catalogue changes.
type kinds struct {
	catalog *resource.Catalog
	mu      sync.Mutex
	gen     uint64 // guarded by mu
	byKind  map[[3]string]*resource.Resource
}

func (k *kinds) resource(apiVersion, kind string) (*resource.Resource, error) {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		group, version = "", apiVersion
	}
	gen, _ := k.catalog.Generation()
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.byKind == nil || gen != k.gen {
		k.byKind = map[[3]string]*resource.Resource{}
		for _, r := range k.catalog.All() {
			if !r.CreateOnly {
				k.byKind[[3]string{r.Group, r.Version, r.Kind}] = r
			}
		}
		k.gen = gen
	}
	if r, ok := k.byKind[[3]string{group, version, kind}]; ok {
		return r, nil
	}
	return nil, &mappingError{apiVersion, kind}
}

// namespaceOf returns the namespace an object of res named with namespace
// ns is in: none for a cluster-scoped resource.
func namespaceOf(res *resource.Resource, ns string) string {
	if res.Namespaced {
		return ns
	}
	return ""
}

func isNotFound(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Code == http.StatusNotFound
}

func isConflict(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Code == http.StatusConflict
}

// get reads the object id names from the store (kube's getObject, from
// the API server).
func (c *Collector) get(ctx context.Context, id identity) (objectMeta, error) {
	res, err := c.kinds.resource(id.APIVersion, id.Kind)
	if err != nil {
		return objectMeta{}, err
	}
	if res.Namespaced && id.Namespace == "" {
		return objectMeta{}, errNamespacedOwnerOfClusterScoped
	}
	kv, err := c.cfg.Registry.GetStored(ctx, res, namespaceOf(res, id.Namespace), id.Name)
	if err != nil {
		return objectMeta{}, err
	}
	m, err := parseMeta(kv.Value)
	m.rv = strconv.FormatInt(kv.ModRevision, 10)
	return m, err
}

// attemptToDeleteItem deletes the object of n if none of its owners
// stands, removes its references to absent owners if one does, and
// carries on a foreground deletion it waits for, as kube's.
func (c *Collector) attemptToDeleteItem(ctx context.Context, n *node) error {
	st, _ := c.graph.state(n)
	if st.beingDeleted && !st.deletingDeps {
		return nil // on its way; its dependents are handled when it is gone
	}
	latest, err := c.get(ctx, st.id)
	switch {
	case isNotFound(err) || err == nil && latest.Metadata.UID != st.id.UID:
		c.changes.Add(&event{typ: virtualDelete, id: st.id})
		return errVirtualDeleteQueued
	case err != nil:
		return err
	}
	if st.deletingDeps {
		return c.processDeletingDependents(ctx, n, st.id)
	}
	refs := latest.Metadata.OwnerReferences
	if len(refs) == 0 {
		return nil
	}
	solid, dangling, waiting, err := c.classify(ctx, st.id, refs)
	if err != nil {
		return err
	}
	switch {
	case len(solid) > 0:
		if len(dangling) == 0 && len(waiting) == 0 {
			return nil
		}
		// Waiting owners must go from the references too, or they would
		// wait for this dependent for ever.
		gone := append(dangling, waiting...)
		return c.patchMeta(ctx, st.id, func(md map[string]any) {
			setOwnerRefs(md, func(r map[string]any) bool { return !slices.Contains(gone, r["uid"]) })
		})
	case len(waiting) > 0:
		has, cycle := c.graph.anyDependentDeletingDependents(n)
		if !has {
			break // no dependents: deleted in the background below
		}
		if cycle {
			// A dependent waits for its own dependents too: a possible
			// cycle, broken by this object no longer blocking its owners.
			err := c.patchMeta(ctx, st.id, func(md map[string]any) {
				setOwnerRefs(md, func(r map[string]any) bool {
					if r["blockOwnerDeletion"] == true {
						r["blockOwnerDeletion"] = false
					}
					return true
				})
			})
			if err != nil {
				return err
			}
		}
		return c.deleteObject(ctx, st.id, latest.rv, refs, policyForeground)
	}
	policy := policyBackground
	switch {
	case latest.has(registry.OrphanFinalizer):
		policy = policyOrphan
	case latest.has(registry.ForegroundFinalizer):
		policy = policyForeground
	}
	return c.deleteObject(ctx, st.id, latest.rv, refs, policy)
}

// classify sorts an object's references: owners that stand, owners absent,
// and owners waiting in the foreground for their dependents.
func (c *Collector) classify(ctx context.Context, item identity, refs []ownerRef) (solid, dangling, waiting []any, err error) {
	for _, r := range refs {
		owner, absent, err := c.isDangling(ctx, r, item)
		switch {
		case err != nil:
			return nil, nil, nil, err
		case absent:
			dangling = append(dangling, r.UID)
		case owner.Metadata.DeletionTimestamp != nil && owner.has(registry.ForegroundFinalizer):
			waiting = append(waiting, r.UID)
		default:
			solid = append(solid, r.UID)
		}
	}
	return solid, dangling, waiting, nil
}

// isDangling reports whether the owner r names is absent: no object of its
// kind with its name and uid, in item's namespace for a namespaced kind.
func (c *Collector) isDangling(ctx context.Context, r ownerRef, item identity) (owner objectMeta, absent bool, err error) {
	key := identity{APIVersion: r.APIVersion, Kind: r.Kind, Name: r.Name, UID: r.UID}
	if c.graph.absent.has(key) {
		return owner, true, nil
	}
	key.Namespace = item.Namespace
	if c.graph.absent.has(key) {
		return owner, true, nil
	}
	res, err := c.kinds.resource(r.APIVersion, r.Kind)
	if err != nil {
		return owner, false, err
	}
	if !res.Namespaced {
		key.Namespace = ""
	}
	if item.Namespace == "" && res.Namespaced {
		c.log.Info("garbage collector: a cluster-scoped object refers to a namespaced owner; not collected", "item", item, "owner", r)
		return owner, false, errNamespacedOwnerOfClusterScoped
	}
	kv, err := c.cfg.Registry.GetStored(ctx, res, key.Namespace, r.Name)
	switch {
	case isNotFound(err):
		c.graph.absent.add(key)
		return owner, true, nil
	case err != nil:
		return owner, false, err
	}
	if owner, err = parseMeta(kv.Value); err != nil {
		return owner, false, err
	}
	if owner.Metadata.UID != r.UID {
		c.graph.absent.add(key) // the name's object now is another one
		return owner, true, nil
	}
	return owner, false, nil
}

// processDeletingDependents finishes the foreground deletion of n once
// none of its dependents blocks it, and queues those that do.
func (c *Collector) processDeletingDependents(ctx context.Context, n *node, id identity) error {
	deps, deleting := c.graph.blockingDependents(n)
	if len(deps) == 0 {
		return c.removeFinalizer(ctx, id, registry.ForegroundFinalizer)
	}
	for i, dep := range deps {
		if !deleting[i] {
			c.toDelete.Add(dep)
		}
	}
	return nil
}

// orphanDependents removes owner from the references of deps.
func (c *Collector) orphanDependents(ctx context.Context, owner identity, deps []*node) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		sem  = make(chan struct{}, orphanConcurrency)
	)
	for _, dep := range deps {
		st, _ := c.graph.state(dep)
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			err := c.patchMeta(ctx, st.id, func(md map[string]any) {
				setOwnerRefs(md, func(r map[string]any) bool { return r["uid"] != owner.UID })
			})
			if err != nil && !isNotFound(err) && !errors.Is(err, errGone) {
				mu.Lock()
				errs = append(errs, fmt.Errorf("orphaning %v: %w", st.id, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// orphanConcurrency bounds the dependents orphaned at once (kube starts a
// goroutine for each).
const orphanConcurrency = 16

// removeFinalizer removes finalizer from the object id names, if it is
// still there (kube's removeFinalizer).
func (c *Collector) removeFinalizer(ctx context.Context, id identity, finalizer string) error {
	err := c.patchMeta(ctx, id, func(md map[string]any) {
		fs, _ := md["finalizers"].([]any)
		fs = slices.DeleteFunc(fs, func(f any) bool { return f == finalizer })
		if len(fs) == 0 {
			delete(md, "finalizers")
		} else {
			md["finalizers"] = fs
		}
	})
	if isNotFound(err) || errors.Is(err, errGone) {
		return nil
	}
	return err
}

// errGone: the object of the name is not the one the collector meant (its
// uid differs).
var errGone = errors.New("the object was deleted and made again")

// patchMeta changes the metadata of the object id names, through the
// registry, as kube's collector patches it: with the object's uid as a
// precondition, retried on conflicting writes.
func (c *Collector) patchMeta(ctx context.Context, id identity, change func(md map[string]any)) error {
	res, err := c.kinds.resource(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	_, err = c.cfg.Registry.Update(ctx, res, namespaceOf(res, id.Namespace), id.Name, func(cur api.Object) (api.Object, error) {
		if cur.UID() != id.UID {
			return nil, errGone
		}
		next := cur.DeepCopy()
		md := next.Metadata()
		delete(md, "resourceVersion") // no precondition: recomputed on conflict
		change(md)
		return next, nil
	})
	return err
}

// setOwnerRefs keeps the ownerReferences keep returns true for (which may
// change them).
func setOwnerRefs(md map[string]any, keep func(r map[string]any) bool) {
	refs, _ := md["ownerReferences"].([]any)
	refs = slices.DeleteFunc(refs, func(v any) bool {
		r, ok := v.(map[string]any)
		return ok && !keep(r)
	})
	if len(refs) == 0 {
		delete(md, "ownerReferences")
	} else {
		md["ownerReferences"] = refs
	}
}

// deleteObject deletes the object id names with preconditions on its uid
// and resourceVersion (when known), as kube's: if only an unrelated field
// changed meanwhile, it deletes again without the resourceVersion.
func (c *Collector) deleteObject(ctx context.Context, id identity, rv string, owners []ownerRef, policy string) error {
	res, err := c.kinds.resource(id.APIVersion, id.Kind)
	if err != nil {
		return err
	}
	ns := namespaceOf(res, id.Namespace)
	pre := registry.Preconditions{UID: &id.UID}
	if rv != "" {
		pre.ResourceVersion = &rv
	}
	err = c.deleteWithPolicy(ctx, res, ns, id.Name, pre, policy)
	if isConflict(err) && rv != "" {
		live, err2 := c.get(ctx, id)
		if isNotFound(err2) {
			err = err2
		} else if err2 == nil && live.Metadata.UID == id.UID && live.rv != rv && reflect.DeepEqual(live.Metadata.OwnerReferences, owners) {
			return c.deleteObject(ctx, id, "", nil, policy)
		}
	}
	if isNotFound(err) {
		c.changes.Add(&event{typ: virtualDelete, id: id})
		return errVirtualDeleteQueued
	}
	return err
}

// deleteWithPolicy is a DELETE with propagationPolicy policy.
func (c *Collector) deleteWithPolicy(ctx context.Context, res *resource.Resource, ns, name string, pre registry.Preconditions, policy string) error {
	_, _, err := c.cfg.Registry.Delete(ctx, res, ns, name, registry.DeleteOptions{Preconditions: pre, Propagation: policy})
	return err
}
