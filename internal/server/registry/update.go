package registry

import (
	"bytes"
	"context"
	"errors"
	"reflect"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// UpdateFunc computes an object's new state from its current one, which it
// must not change (the update is checked against it) and which the result
// must not be. A metadata.resourceVersion left in the result is a
// precondition: the write fails with 409 unless it is the current one.
type UpdateFunc func(current api.Object) (api.Object, error)

// Update rewrites one object with the result of tryUpdate, retrying on
// concurrent writes unless the result carries a resourceVersion
// precondition. An object whose deletion was requested is deleted once its
// last finalizer is removed (Written.Deleted).
func (r *Registry) Update(ctx context.Context, res *resource.Resource, ns, name string, tryUpdate UpdateFunc) (Written, error) {
	key := res.Key(ns, name)
	for {
		kv, err := r.store.Get(ctx, key)
		if err != nil {
			return Written{}, apierror.FromStorage(err, target(res, name))
		}
		cur, err := decode(kv)
		if err != nil {
			return Written{}, apierror.Internal(err)
		}
		if cur, err = convert(ctx, res, cur); err != nil {
			return Written{}, err
		}
		if res.OmitEmpty != nil {
			// Defaulted as kube decodes what it reads from storage: a
			// field defaulted to its empty value, omitted when stored,
			// is set again, as it is in the write made from cur, so that
			// the update's rules see it unchanged.
			res.PruneAndDefault(cur)
		}
		next, err := tryUpdate(cur)
		if err != nil {
			return Written{}, err
		}
		precondition, err := ParseResourceVersion(next.ResourceVersion())
		if err != nil {
			return Written{}, apierror.BadRequest(err.Error())
		}
		if precondition != 0 && precondition != kv.ModRevision {
			return Written{}, apierror.Conflict(target(res, name), "")
		}
		if precondition == 0 {
			// As kube's store gives an unconditional update the revision
			// it writes over, so that validation (a claim's status rules
			// require one) and admission see it.
			withRevision(next, kv.ModRevision)
		}
		out, err := r.write(ctx, res, ns, name, kv, cur, next)
		if errors.Is(err, storage.ErrConflict) && precondition == 0 {
			continue // someone wrote in between: recompute from their state
		}
		if err != nil || out.Stored.Value == nil {
			return out, err
		}
		return readBack(ctx, res, out)
	}
}

// write stores next in place of the current KV with compare-and-swap.
func (r *Registry) write(ctx context.Context, res *resource.Resource, ns, name string, kv storage.KV, cur, next api.Object) (Written, error) {
	if err := DecodeFields(ctx, res, next); err != nil {
		return Written{}, err
	}
	if err := r.prepareUpdate(res, ns, name, next, cur); err != nil {
		return Written{}, err
	}
	finish, err := allocate(ctx, res, next, cur)
	if err != nil {
		return Written{}, err
	}
	out, err := r.writeAllocated(ctx, res, name, kv, cur, next)
	finish(err == nil && out.Stored.Value != nil) // not stored when its last finalizer went
	return out, err
}

// writeAllocated is write once next is prepared and allocated.
func (r *Registry) writeAllocated(ctx context.Context, res *resource.Resource, name string, kv storage.KV, cur, next api.Object) (Written, error) {
	if err := validate(ctx, res, next, cur); err != nil {
		return Written{}, err
	}
	if res.OmitEmpty != nil {
		res.OmitEmpty(next)
	}
	if err := admit(ctx, next, cur); err != nil {
		return Written{}, err
	}
	if deleting(next) && len(finalizers(next)) == 0 && (!isNamespaces(res) || len(specFinalizers(next)) == 0) {
		// kube's deleteWithoutFinalizers answers the updated object, "as
		// clients are expecting an updated object if a PUT succeeded", at
		// the revision it was read at (its store sets that revision on an
		// unconditional update, and a patch applies to the object read).
		// A namespace waits for its spec.finalizers too
		// (ShouldDeleteNamespaceDuringUpdate).
		deleted, err := r.deleteKV(ctx, res, kv, cur)
		return Written{Object: withRevision(next, kv.ModRevision), Deleted: deleted}, err
	}
	value, stored, err := encodeFor(ctx, res, next)
	if err != nil {
		return Written{}, err
	}
	if bytes.Equal(value, kv.Value) { // no change, no new revision (as kube)
		return Written{Object: withRevision(next, kv.ModRevision), Stored: kv, stored: stored}, nil
	}
	rev, err := r.writer(ctx).Update(ctx, kv.Key, kv.ModRevision, value)
	if err != nil {
		if errors.Is(err, storage.ErrConflict) {
			return Written{}, errors.Join(err, apierror.Conflict(target(res, name), ""))
		}
		return Written{}, apierror.FromStorage(err, target(res, name))
	}
	written := storage.KV{Key: kv.Key, Value: value, CreateRevision: kv.CreateRevision, ModRevision: rev}
	return Written{Object: withRevision(next, rev), Stored: written, stored: stored}, nil
}

// prepareUpdate makes next keep what a client may not change: identity,
// creation time, deletion state, and (with a status subresource) status;
// and, for a resource with Generation, bumps it when anything but metadata
// and status changed.
func (r *Registry) prepareUpdate(res *resource.Resource, ns, name string, next, cur api.Object) error {
	if err := CheckTypeAndScope(res, ns, next); err != nil {
		return err
	}
	if n := next.Name(); n != name {
		return apierror.OtherName(n, name)
	}
	md, old := next.Metadata(), cur.Metadata()
	for _, f := range []string{"uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"} {
		if v, ok := old[f]; ok {
			md[f] = v
		} else {
			delete(md, f)
		}
	}
	delete(md, "selfLink")
	if res.StatusSubresource {
		if st, ok := cur["status"]; ok {
			next["status"] = st
		} else {
			delete(next, "status")
		}
	}
	if res.Prepare != nil {
		res.Prepare(next, cur)
	}
	if res.Generation && specChanged(next, cur, res.StatusSubresource) {
		md["generation"] = resource.GenerationOf(cur) + 1
	}
	return nil
}

// specChanged reports whether anything but metadata differs, status aside
// too when it is a subresource (as kube-apiserver bumps a custom resource's
// generation on a status change only when status has no subresource).
func specChanged(a, b api.Object, statusApart bool) bool {
	ignored := func(k string) bool { return k == "metadata" || statusApart && k == "status" }
	for k, v := range a {
		if !ignored(k) && !reflect.DeepEqual(v, b[k]) {
			return true
		}
	}
	for k := range b {
		if _, ok := a[k]; !ok && !ignored(k) {
			return true
		}
	}
	return false
}

func deleting(obj api.Object) bool { return obj.Metadata()["deletionTimestamp"] != nil }

func finalizers(obj api.Object) []any {
	f, _ := obj.Metadata()["finalizers"].([]any)
	return f
}
