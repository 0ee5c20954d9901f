package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// Preconditions must hold for a delete to happen (DeleteOptions.preconditions).
type Preconditions struct {
	UID             *string
	ResourceVersion *string
}

// DeleteOptions are what a delete honours of meta/v1 DeleteOptions.
type DeleteOptions struct {
	Preconditions
	// Propagation is the propagationPolicy asked for: Orphan, Background,
	// Foreground, or "" for none.
	Propagation string
	// OrphanDependents is the deprecated orphanDependents asked for, nil
	// for none (never set with Propagation).
	OrphanDependents *bool
}

// The finalizers kube's garbage collector acts on: an object deleted with
// one of them stays until the collector has orphaned its dependents or
// deleted those that block it.
const (
	OrphanFinalizer     = "orphan"
	ForegroundFinalizer = "foregroundDeletion"
)

// protectedNamespaces may not be deleted, as in kube-apiserver.
var protectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// Delete deletes one object or, if finalizers hold it, marks it with a
// deletionTimestamp and leaves it until they are removed. Before that, as
// kube-apiserver's generic registry (deletionFinalizersForGarbageCollection),
// it sets the garbage collector's finalizers the propagation policy asks
// for: on a second delete too, so that Foreground may follow Orphan.
//
// It returns the object as kube-apiserver's registry answers it and whether
// it is gone: a deleted object as last stored, at the delete's revision (a
// dry run's at its own); a marked one as marked. A namespace's first delete
// marks it Terminating, for the namespace controller to delete its contents
// and finalize it (markNamespace); a later one deletes it once
// spec.finalizers is empty, as any object. Definitions, which kube marks
// on their first delete and a controller deletes, are deleted at once
// unless finalizers hold them, and answered as kube marks them; their
// first delete sets no collector's finalizers.
func (r *Registry) Delete(ctx context.Context, res *resource.Resource, ns, name string, opts DeleteOptions) (api.Object, bool, error) {
	if isNamespaces(res) && protectedNamespaces[name] {
		return nil, false, forbidden(res, name, "this namespace may not be deleted")
	}
	key := res.Key(ns, name)
	for {
		kv, err := r.store.Get(ctx, key)
		if err != nil {
			return nil, false, apierror.FromStorage(err, target(res, name))
		}
		cur, err := decode(kv)
		bad := err != nil
		if bad {
			cur = undecodable(res, ns, name, kv)
		}
		if err := CheckPreconditions(res, cur, opts.Preconditions); err != nil {
			return nil, false, err
		}
		served, err := convert(ctx, res, cur.DeepCopy())
		if err != nil {
			return nil, false, err
		}
		if err := admit(ctx, nil, served); err != nil {
			return nil, false, err
		}
		if isNamespaces(res) && !bad && !deleting(cur) {
			out, err := r.markNamespace(ctx, res, kv, cur, opts)
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			return out, false, err
		}
		if isNamespaces(res) && len(specFinalizers(cur)) > 0 {
			// kube's namespace storage answers a namespace whose contents
			// are not yet finalized as it is.
			return served, false, nil
		}
		fins, changed := finalizers(cur), false
		if !bad && (deleting(cur) || !isDefinitions(res)) {
			fins, changed = gcFinalizers(res, cur, opts)
		}
		if len(fins) > 0 {
			out, err := r.markDeleting(ctx, res, kv, cur, fins, changed)
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			return out, false, err
		}
		out, err := r.deleteKV(ctx, res, kv, cur)
		if errors.Is(err, storage.ErrConflict) && opts.ResourceVersion == nil {
			continue
		}
		if err != nil || !isDefinitions(res) {
			return out, err == nil, err
		}
		r.markTerminating(out)
		return out, false, nil
	}
}

// gcFinalizers returns the finalizers obj is to have once deleted with
// opts, and whether they differ from its own as a set, as kube's
// deletionFinalizersForGarbageCollection: orphan and foregroundDeletion
// removed, then the one the policy asks for added back; without a policy,
// the one obj had first; without either, the resource's default, which is
// Background (none) for every kind served but Events, whose storage does
// not support collection (rest.Unsupported: neither is kept).
func gcFinalizers(res *resource.Resource, obj api.Object, opts DeleteOptions) ([]any, bool) {
	have := finalizers(obj)
	policy := opts.policy(isNamespaces(res) && !deleting(obj))
	for _, f := range have {
		if policy != "" {
			break
		}
		switch f {
		case OrphanFinalizer:
			policy = "Orphan"
		case ForegroundFinalizer:
			policy = "Foreground"
		}
	}
	if isEvents(res) {
		policy = ""
	}
	orphan, foreground := policy == "Orphan", policy == "Foreground"
	if slices.Contains(have, any(OrphanFinalizer)) == orphan && slices.Contains(have, any(ForegroundFinalizer)) == foreground {
		return have, false // the same set, in its order
	}
	next := slices.DeleteFunc(slices.Clone(have), func(f any) bool { return f == OrphanFinalizer || f == ForegroundFinalizer })
	switch {
	case orphan:
		next = append(next, OrphanFinalizer)
	case foreground:
		next = append(next, ForegroundFinalizer)
	}
	return next, true
}

// policy is the propagation opts ask for, "" for none, with
// orphanDependents read as kube does: true is Orphan; false is neither
// orphan nor foreground in the generic registry (Background), and
// Foreground in the namespace storage.
func (o DeleteOptions) policy(namespace bool) string {
	switch {
	case o.OrphanDependents == nil:
		return o.Propagation
	case *o.OrphanDependents:
		return "Orphan"
	case namespace:
		return "Foreground"
	}
	return "Background"
}

// undecodable stands for a stored value that cannot be decoded (written by
// an older version, or a bug), so that it can still be deleted: it has what
// its key and revision say (no uid, so a uid precondition fails; no
// finalizers, so nothing holds it).
func undecodable(res *resource.Resource, ns, name string, kv storage.KV) api.Object {
	md := map[string]any{"name": name}
	if ns != "" {
		md["namespace"] = ns
	}
	return withRevision(api.Object{"kind": res.Kind, "metadata": md}, kv.ModRevision)
}

func isNamespaces(res *resource.Resource) bool { return res.Group == "" && res.Plural == "namespaces" }

// isEvents reports whether res is Events (core/v1 or events.k8s.io/v1,
// one storage), which kube's garbage collection does not support.
func isEvents(res *resource.Resource) bool {
	if res.Storage != nil {
		res = res.Storage
	}
	return res.Group == "" && res.Plural == "events"
}

// specFinalizers are a namespace's spec.finalizers, which kube's namespace
// controller removes once it has deleted the namespace's contents.
func specFinalizers(ns api.Object) []any {
	spec, _ := ns["spec"].(map[string]any)
	f, _ := spec["finalizers"].([]any)
	return f
}

func isDefinitions(res *resource.Resource) bool {
	return res.Group == "apiextensions.k8s.io" && res.Plural == "customresourcedefinitions"
}

// crdCleanupFinalizer is the finalizer kube-apiserver puts on a definition
// it is asked to delete, until the definition's objects are gone.
const crdCleanupFinalizer = "customresourcecleanup.apiextensions.k8s.io"

func forbidden(res *resource.Resource, name, why string) *api.StatusError {
	s := api.NewStatus(http.StatusForbidden, api.StatusReasonForbidden, fmt.Sprintf("%s %q is forbidden: %s", res.GroupResource(), name, why))
	s.Details = &api.StatusDetails{Name: name, Group: res.Group, Kind: res.Plural}
	return &api.StatusError{Status: s}
}

// CheckPreconditions fails with kube-apiserver's 409 when pre does not
// hold: namespaces and definitions check them in their own REST storage,
// with its messages; every other kind in rest.BeforeDelete, which names the
// object by its kind.
func CheckPreconditions(res *resource.Resource, cur api.Object, pre Preconditions) error {
	uid, rv := cur.UID(), cur.ResourceVersion()
	uidFailed := pre.UID != nil && *pre.UID != uid
	rvFailed := !uidFailed && pre.ResourceVersion != nil && *pre.ResourceVersion != rv
	if !uidFailed && !rvFailed {
		return nil
	}
	var msg string
	switch {
	case terminates(res) && uidFailed:
		msg = fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, uid)
	case terminates(res):
		msg = fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, rv)
	case uidFailed:
		msg = fmt.Sprintf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pre.UID, uid)
	default:
		msg = fmt.Sprintf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pre.ResourceVersion, rv)
	}
	switch {
	case isDefinitions(res):
		return apierror.Conflict(target(res, cur.Name()), "p"+msg[1:])
	case terminates(res):
		return apierror.Conflict(target(res, cur.Name()), msg)
	}
	return apierror.Conflict(apierror.Target{Group: res.Group, Resource: res.Kind, Name: cur.Name()}, msg)
}

// markDeleting stores cur marked for deletion, held by finalizers fins,
// as kube's markAsDeleting: deletionTimestamp and, if it has one, a
// generation bump the first time (its controllers now have a change to act
// on), deletionGracePeriodSeconds 0. An object already marked whose
// finalizers do not change is answered as it is, with no write.
func (r *Registry) markDeleting(ctx context.Context, res *resource.Resource, kv storage.KV, cur api.Object, fins []any, changed bool) (api.Object, error) {
	if deleting(cur) && !changed {
		return convert(ctx, res, cur)
	}
	next := cur.DeepCopy()
	if !deleting(cur) {
		next.SetMeta("deletionTimestamp", api.NewTime(r.now()).Format("2006-01-02T15:04:05Z"))
		if g := resource.GenerationOf(cur); g > 0 {
			next.SetMeta("generation", g+1)
		}
	}
	next.SetMeta("deletionGracePeriodSeconds", 0)
	next.SetMeta("finalizers", fins)
	return r.writeMarked(ctx, res, kv, next)
}

// markNamespace is the first delete of a namespace, as kube's namespace
// storage makes it: deletionTimestamp, phase Terminating and the
// collector's finalizers opts ask for, nothing else; the namespace
// controller then deletes its contents and removes its spec.finalizers.
func (r *Registry) markNamespace(ctx context.Context, res *resource.Resource, kv storage.KV, cur api.Object, opts DeleteOptions) (api.Object, error) {
	next := cur.DeepCopy()
	next.SetMeta("deletionTimestamp", api.NewTime(r.now()).Format("2006-01-02T15:04:05Z"))
	status, _ := next["status"].(map[string]any)
	if status == nil {
		status = map[string]any{}
		next["status"] = status
	}
	status["phase"] = "Terminating"
	if fins, changed := gcFinalizers(res, cur, opts); changed {
		next.SetMeta("finalizers", fins)
	}
	return r.writeMarked(ctx, res, kv, next)
}

// writeMarked stores next, cur marked for deletion, in place of kv.
func (r *Registry) writeMarked(ctx context.Context, res *resource.Resource, kv storage.KV, next api.Object) (api.Object, error) {
	value, err := encode(next)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	rev, err := r.writer(ctx).Update(ctx, kv.Key, kv.ModRevision, value)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, err
		}
		return nil, apierror.FromStorage(err, target(res, next.Name()))
	}
	return convert(ctx, res, withRevision(next, rev))
}

// deleteKV removes the stored object if it is still at kv's revision and
// returns it as stored, at the delete's revision (kube's etcd3 store decodes
// the deleted value at the delete response's revision).
func (r *Registry) deleteKV(ctx context.Context, res *resource.Resource, kv storage.KV, cur api.Object) (api.Object, error) {
	_, rev, err := r.writer(ctx).Delete(ctx, kv.Key, kv.ModRevision)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, errors.Join(err, apierror.Conflict(target(res, cur.Name()), ""))
		}
		return nil, apierror.FromStorage(err, target(res, cur.Name()))
	}
	if res.Release != nil && !IsDryRun(ctx) {
		res.Release(cur)
	}
	return convert(ctx, res, withRevision(cur, rev))
}

// terminates reports whether kube-apiserver's storage for res marks an
// object on its first delete for a controller to delete it later.
func terminates(res *resource.Resource) bool { return isNamespaces(res) || isDefinitions(res) }

// markTerminating marks the answer to the delete of a definition as
// kube-apiserver's storage marks it on a first delete (never stored so:
// nothing here would remove the finalizer).
func (r *Registry) markTerminating(obj api.Object) {
	now := api.NewTime(r.now()).Format("2006-01-02T15:04:05Z")
	if !deleting(obj) {
		obj.SetMeta("deletionTimestamp", now)
	}
	if !slices.Contains(finalizers(obj), any(crdCleanupFinalizer)) {
		obj.SetMeta("finalizers", append(finalizers(obj), crdCleanupFinalizer))
	}
	st, _ := obj["status"].(map[string]any)
	if st == nil {
		st = map[string]any{}
		obj["status"] = st
	}
	conds, _ := st["conditions"].([]any)
	conds = slices.DeleteFunc(slices.Clone(conds), func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == "Terminating"
	})
	st["conditions"] = append(conds, map[string]any{
		"type": "Terminating", "status": "True", "lastTransitionTime": now,
		"reason": "InstanceDeletionPending", "message": "CustomResourceDefinition marked for deletion; CustomResource deletion will begin soon",
	})
}

// Expire deletes the object of res at ns/name if its last write is still
// revision rev, whatever finalizers it has, as etcd deletes a key whose
// lease expired (kube-apiserver writes each Event with such a lease,
// --event-ttl). It fails with a Conflict if the object was written since,
// NotFound if it is gone.
func (r *Registry) Expire(ctx context.Context, res *resource.Resource, ns, name string, rev int64) error {
	_, _, err := r.writer(ctx).Delete(ctx, res.Key(ns, name), rev)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, storage.ErrConflict):
		return apierror.Conflict(target(res, name), "")
	}
	return apierror.FromStorage(err, target(res, name))
}

// DeleteUndecodable deletes the stored values of res in namespace ns that
// cannot be decoded (written by an older version, or a bug): no list shows
// them, so the namespace controller, which deletes what lists show, would
// leave them behind its namespace. A value rewritten meanwhile is kept.
func (r *Registry) DeleteUndecodable(ctx context.Context, res *resource.Resource, ns string) error {
	prefix := res.KeyPrefix(ns)
	opts := storage.ListOptions{Limit: 500}
	for {
		page, err := r.store.List(ctx, prefix, opts)
		if err != nil {
			return apierror.FromStorage(err, apierror.Target{})
		}
		for _, kv := range page.KVs {
			if _, err := decode(kv); err == nil {
				continue
			}
			_, _, err := r.writer(ctx).Delete(ctx, kv.Key, kv.ModRevision)
			if err != nil && !errors.Is(err, storage.ErrNotFound) && !errors.Is(err, storage.ErrConflict) {
				return apierror.FromStorage(err, apierror.Target{})
			}
		}
		if page.Continue == "" {
			return nil
		}
		opts.Continue = page.Continue
	}
}

// DeletePrefix deletes every stored value of res in every namespace,
// whatever it holds, releasing what each held (Release); used when res's
// CustomResourceDefinition is deleted. Each page is deleted before the
// next is listed, so the list starts again from the prefix.
func (r *Registry) DeletePrefix(ctx context.Context, res *resource.Resource) error {
	prefix := res.KeyPrefix("")
	for {
		page, err := r.store.List(ctx, prefix, storage.ListOptions{Limit: 500})
		if err != nil {
			return apierror.FromStorage(err, apierror.Target{})
		}
		for _, kv := range page.KVs {
			gone, _, err := r.writer(ctx).Delete(ctx, kv.Key, 0)
			if err != nil && !errors.Is(err, storage.ErrNotFound) {
				return apierror.FromStorage(err, apierror.Target{})
			}
			if obj, derr := decode(gone); err == nil && derr == nil && res.Release != nil && !IsDryRun(ctx) {
				res.Release(obj)
			}
		}
		if page.Continue == "" {
			return nil
		}
	}
}

// DeleteCollection deletes every object of res in ns that passes lopts'
// selectors, each as Delete with opts. As kube-apiserver's, it answers the
// list as read before the deletes (one page when lopts has a limit, every
// object otherwise), and returns the objects it deleted or marked, as
// Delete answers them.
func (r *Registry) DeleteCollection(ctx context.Context, res *resource.Resource, ns string, lopts ListOptions, opts DeleteOptions) (ListResult, []api.Object, error) {
	list, err := r.List(ctx, res, ns, ListOptions{Labels: lopts.Labels, Fields: lopts.Fields, Limit: lopts.Limit, Continue: lopts.Continue})
	if err != nil {
		return ListResult{}, nil, err
	}
	var deleted []api.Object
	for _, obj := range list.Items {
		out, _, err := r.Delete(ctx, res, obj.Namespace(), obj.Name(), opts)
		var se *api.StatusError
		if errors.As(err, &se) && se.Status.Code == http.StatusNotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return ListResult{}, deleted, err
		}
		deleted = append(deleted, out)
	}
	return list, deleted, nil
}
