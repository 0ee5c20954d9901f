package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"

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
// object as last stored and whether it is gone.
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
		return out, err == nil, err
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

func forbidden(res *resource.Resource, name, why string) *api.StatusError {
	s := api.NewStatus(http.StatusForbidden, api.StatusReasonForbidden, fmt.Sprintf("%s %q is forbidden: %s", res.GroupResource(), name, why))
	s.Details = &api.StatusDetails{Name: name, Group: res.Group, Kind: res.Plural}
	return &api.StatusError{Status: s}
}

func checkPreconditions(res *resource.Resource, cur api.Object, pre Preconditions) error {
	if pre.UID != nil && *pre.UID != cur.UID() {
		return apierror.Conflict(target(res, cur.Name()), fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", *pre.UID, cur.UID()))
	}
	if pre.ResourceVersion != nil && *pre.ResourceVersion != cur.ResourceVersion() {
		return apierror.Conflict(target(res, cur.Name()), fmt.Sprintf("Precondition failed: ResourceVersion in precondition: %v, ResourceVersion in object meta: %v", *pre.ResourceVersion, cur.ResourceVersion()))
	}
	return nil
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

// deleteKV removes the stored object if it is still at kv's revision.
func (r *Registry) deleteKV(ctx context.Context, res *resource.Resource, kv storage.KV, cur api.Object) (api.Object, error) {
	_, _, err := r.writer(ctx).Delete(ctx, kv.Key, kv.ModRevision)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return nil, errors.Join(err, apierror.Conflict(target(res, cur.Name()), ""))
		}
		return nil, apierror.FromStorage(err, target(res, cur.Name()))
	}
	return convert(res, cur), nil
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
// selectors and returns them.
func (r *Registry) DeleteCollection(ctx context.Context, res *resource.Resource, ns string, opts ListOptions, pre Preconditions) ([]api.Object, error) {
	list, err := r.List(ctx, res, ns, ListOptions{Labels: opts.Labels, Fields: opts.Fields})
	if err != nil {
		return nil, err
	}
	var out []api.Object
	for _, obj := range list.Items {
		deleted, _, err := r.Delete(ctx, res, obj.Namespace(), obj.Name(), pre)
		var se *api.StatusError
		if errors.As(err, &se) && se.Status.Code == http.StatusNotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return out, err
		}
		out = append(out, deleted)
	}
	return out, nil
}
