package registry

import (
	"context"
	"errors"
	"fmt"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// ListOptions are a list request's parameters, already parsed and validated.
type ListOptions struct {
	// ResourceVersion is 0 for the latest state, else the revision to read
	// at (Exact) or not older than.
	ResourceVersion int64
	// Exact reads at exactly ResourceVersion (resourceVersionMatch=Exact,
	// or a limit with a resourceVersion, as kube's legacy rule says).
	Exact    bool
	Limit    int64
	Continue string
	Labels   selector.Labels
	Fields   selector.Fields
}

// ListResult is one page of a list.
type ListResult struct {
	Items           []api.Object
	ResourceVersion int64
	Continue        string
}

// Predicate reports whether an object passes a list's label and field selectors.
func Predicate(res *resource.Resource, labels selector.Labels, fields selector.Fields) func(api.Object) bool {
	return func(obj api.Object) bool {
		if !labels.Empty() && !labels.Matches(obj.Labels()) {
			return false
		}
		return fields.Empty() || fields.Matches(FieldSet(res, obj))
	}
}

// FieldSet returns the fields of obj a field selector can test.
func FieldSet(res *resource.Resource, obj api.Object) map[string]string {
	set := map[string]string{"metadata.name": obj.Name()}
	if res.Namespaced {
		set["metadata.namespace"] = obj.Namespace()
	}
	for k, p := range res.FieldPaths {
		set[k] = selector.FieldValue(resource.Path(obj, p...))
	}
	for k, from := range res.FieldFallbacks {
		if set[k] == "" {
			set[k] = set[from]
		}
	}
	for k, v := range res.FieldDefaults {
		if set[k] == "" {
			set[k] = v
		}
	}
	return set
}

// ValidateFields fails with 400 unless every key of fields is supported by res.
func ValidateFields(res *resource.Resource, fields selector.Fields) error {
	for _, k := range fields.Keys() {
		_, extra := res.FieldPaths[k]
		if k != "metadata.name" && !(k == "metadata.namespace" && res.Namespaced && !res.NoNamespaceField) && !extra {
			return apierror.BadRequest(res.FieldLabelError(k))
		}
	}
	return nil
}

// List returns the objects of res in namespace ns (all if "") that pass the
// selectors, one page at a time when opts.Limit is set.
func (r *Registry) List(ctx context.Context, res *resource.Resource, ns string, opts ListOptions) (ListResult, error) {
	prefix := res.KeyPrefix(ns)
	rev, err := r.readRevision(ctx, opts)
	if err != nil {
		return ListResult{}, err
	}
	match := Predicate(res, opts.Labels, opts.Fields)
	sopts := storage.ListOptions{Revision: rev, Limit: opts.Limit, Continue: opts.Continue}
	var out ListResult
	for {
		page, err := r.store.List(ctx, prefix, sopts)
		if err != nil {
			return ListResult{}, listError(err, opts)
		}
		out.ResourceVersion = page.Revision
		for i, kv := range page.KVs {
			if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
				out.Continue = storage.EncodeContinue(prefix, page.Revision, page.KVs[i].Key)
				return out, nil
			}
			obj, err := decode(kv)
			if err != nil {
				// Written by an older version or a bug: skipped, as the
				// watch cache skips it, so that the rest still lists.
				r.log.Error("list skips an object it cannot decode", "key", kv.Key, "revision", kv.ModRevision, "err", err)
				continue
			}
			if obj, err = convert(ctx, res, obj); err != nil {
				return ListResult{}, err
			}
			if match(obj) {
				out.Items = append(out.Items, obj)
			}
		}
		if page.Continue == "" {
			return out, nil
		}
		if opts.Limit > 0 && int64(len(out.Items)) == opts.Limit {
			out.Continue = page.Continue
			return out, nil
		}
		sopts = storage.ListOptions{Limit: opts.Limit, Continue: page.Continue}
	}
}

// readRevision returns the storage revision a list reads at: 0 (current)
// unless the request asked for an exact one. A not-older-than revision
// beyond the store's is 504, as kube-apiserver answers after its wait.
func (r *Registry) readRevision(ctx context.Context, opts ListOptions) (int64, error) {
	if opts.Continue != "" || opts.ResourceVersion == 0 {
		return 0, nil
	}
	if opts.Exact {
		return opts.ResourceVersion, nil
	}
	cur, err := r.store.CurrentRevision(ctx)
	if err != nil {
		return 0, apierror.Internal(err)
	}
	if opts.ResourceVersion > cur {
		return 0, tooLargeRV(fmt.Sprintf("Too large resource version: %d, current: %d", opts.ResourceVersion, cur))
	}
	return 0, nil
}

// tooLargeRV is kube's 504 for a resourceVersion the store has not reached.
func tooLargeRV(msg string) *api.StatusError {
	e := apierror.Timeout(msg, 1)
	e.Status.Details.Causes = []api.StatusCause{{Type: api.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return e
}

// listError translates a storage error of a list.
func listError(err error, opts ListOptions) error {
	continued := opts.Continue != ""
	switch {
	case errors.Is(err, storage.ErrCompacted) && continued:
		return apierror.Expired("The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.")
	case errors.Is(err, storage.ErrFutureRevision):
		return tooLargeRV(fmt.Sprintf("Too large resource version: %d", opts.ResourceVersion))
	case errors.Is(err, storage.ErrInvalidArgument) && continued:
		return apierror.BadRequest(fmt.Sprintf("invalid continue token: %v", err))
	}
	return apierror.FromStorage(err, apierror.Target{})
}
