package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// Preconditions must hold for a delete to happen (DeleteOptions.preconditions).
type Preconditions struct {
	UID             *string
	ResourceVersion *string
}

// protectedNamespaces may not be deleted, as in kube-apiserver.
var protectedNamespaces = map[string]bool{"default": true, "kube-system": true, "kube-public": true}

// Delete deletes one object, or, if it has finalizers, marks it with a
// deletionTimestamp and leaves it until they are removed. It returns the
// object as kube-apiserver's registry answers it and whether it is gone: a
// deleted object as last stored, at the delete's revision (a dry run's at
// its own); a marked one as marked. Namespaces and definitions, which kube
// marks on their first delete and a controller deletes, are deleted at once
// and answered as kube marks them.
func (r *Registry) Delete(ctx context.Context, res *resource.Resource, ns, name string, pre Preconditions) (api.Object, bool, error) {
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
		if err != nil {
			cur = undecodable(res, ns, name, kv)
		}
		if err := checkPreconditions(res, cur, pre); err != nil {
			return nil, false, err
		}
		if len(finalizers(cur)) > 0 {
			out, err := r.markDeleting(ctx, res, kv, cur)
			if errors.Is(err, storage.ErrConflict) {
				continue
			}
			return out, false, err
		}
		if isNamespaces(res) {
			if err := r.deleteContents(ctx, name); err != nil {
				return nil, false, err
			}
		}
		out, err := r.deleteKV(ctx, res, kv, cur)
		if errors.Is(err, storage.ErrConflict) && pre.ResourceVersion == nil {
			continue
		}
		if err != nil || !terminates(res) {
			return out, err == nil, err
		}
		r.markTerminating(res, out)
		return out, false, nil
	}
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

// checkPreconditions fails with kube-apiserver's 409 when pre does not
// hold: namespaces and definitions check them in their own REST storage,
// with its messages; every other kind in rest.BeforeDelete, which names the
// object by its kind.
func checkPreconditions(res *resource.Resource, cur api.Object, pre Preconditions) error {
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

// markDeleting sets deletionTimestamp on an object held by finalizers and,
// as kube-apiserver, bumps its generation if it has one: its controllers
// now have a change to act on.
func (r *Registry) markDeleting(ctx context.Context, res *resource.Resource, kv storage.KV, cur api.Object) (api.Object, error) {
	if deleting(cur) {
		return cur, nil
	}
	next := cur.DeepCopy()
	next.SetMeta("deletionTimestamp", api.NewTime(r.now()).Format("2006-01-02T15:04:05Z"))
	next.SetMeta("deletionGracePeriodSeconds", 0)
	if g := generation(cur); g > 0 {
		next.SetMeta("generation", g+1)
	}
	if isNamespaces(res) {
		next["status"] = map[string]any{"phase": "Terminating"}
	}
	value, err := encode(next)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	rev, err := r.writer(ctx).Update(ctx, kv.Key, kv.ModRevision, value)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, err
		}
		return nil, apierror.FromStorage(err, target(res, cur.Name()))
	}
	return convert(res, withRevision(next, rev)), nil
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
	return convert(res, withRevision(cur, rev)), nil
}

// terminates reports whether kube-apiserver's storage for res marks an
// object on its first delete for a controller to delete it later.
func terminates(res *resource.Resource) bool { return isNamespaces(res) || isDefinitions(res) }

// markTerminating marks the answer to the delete of a namespace or a
// definition as kube-apiserver's storage for them marks the object on a
// first delete (never stored so: nothing here would remove the finalizer).
func (r *Registry) markTerminating(res *resource.Resource, obj api.Object) {
	now := api.NewTime(r.now()).Format("2006-01-02T15:04:05Z")
	if !deleting(obj) {
		obj.SetMeta("deletionTimestamp", now)
	}
	if isNamespaces(res) {
		obj["status"] = map[string]any{"phase": "Terminating"}
		return
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

// deleteContents deletes every namespaced object in namespace ns.
func (r *Registry) deleteContents(ctx context.Context, ns string) error {
	for _, res := range r.resources() {
		if !res.Namespaced || res.Storage != nil || res.CreateOnly {
			continue
		}
		if err := r.deletePrefix(ctx, res.KeyPrefix(ns)); err != nil {
			return err
		}
	}
	return nil
}

// deletePrefix deletes every key under prefix, whatever it holds.
func (r *Registry) deletePrefix(ctx context.Context, prefix string) error {
	for {
		page, err := r.store.List(ctx, prefix, storage.ListOptions{Limit: 500})
		if err != nil {
			return apierror.FromStorage(err, apierror.Target{})
		}
		for _, kv := range page.KVs {
			if _, _, err := r.writer(ctx).Delete(ctx, kv.Key, 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
				return apierror.FromStorage(err, apierror.Target{})
			}
		}
		if page.Continue == "" {
			return nil
		}
	}
}

// DeletePrefix deletes every object of res in every namespace (used when
// its CustomResourceDefinition is deleted).
func (r *Registry) DeletePrefix(ctx context.Context, res *resource.Resource) error {
	return r.deletePrefix(ctx, res.KeyPrefix(""))
}

// DeleteCollection deletes every object of res in ns that passes opts'
// selectors. As kube-apiserver's, it answers the list as read before the
// deletes (one page when opts has a limit, every object otherwise), and
// returns the objects it deleted or marked, as Delete answers them.
func (r *Registry) DeleteCollection(ctx context.Context, res *resource.Resource, ns string, opts ListOptions, pre Preconditions) (ListResult, []api.Object, error) {
	list, err := r.List(ctx, res, ns, ListOptions{Labels: opts.Labels, Fields: opts.Fields, Limit: opts.Limit, Continue: opts.Continue})
	if err != nil {
		return ListResult{}, nil, err
	}
	var deleted []api.Object
	for _, obj := range list.Items {
		out, _, err := r.Delete(ctx, res, obj.Namespace(), obj.Name(), pre)
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
