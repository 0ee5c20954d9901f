package registry

import (
	"bytes"
	"cmp"
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

// namespaces is the namespace resource, for its storage keys.
var namespaces = &resource.Resource{Version: "v1", Plural: "namespaces", Kind: "Namespace"}

// generateNameAttempts bounds retries when a generated name is taken.
const generateNameAttempts = 8

// Written is an object as a write left it.
type Written struct {
	Object api.Object // with metadata.resourceVersion, but for a dry-run create
	// Stored is what the store holds, at the write's revision: JSON gives
	// the response's bytes from it without encoding Object again. It is
	// zero when the write deleted the object (its last finalizer removed).
	Stored storage.KV
	// Deleted is, when an update removed the last finalizer of an object
	// being deleted, the object as deleted, at the delete's revision;
	// Object is then the update's result, never stored.
	Deleted api.Object
	// stored is the object Stored holds when the resource converts to be
	// stored (ToStorage), for readBack.
	stored api.Object
}

// Create stores a new object in namespace ns and returns it as stored.
func (r *Registry) Create(ctx context.Context, res *resource.Resource, ns string, obj api.Object) (Written, error) {
	if err := CheckTypeAndScope(res, ns, obj); err != nil {
		return Written{}, err
	}
	if err := r.checkNamespace(ctx, res, ns, obj); err != nil {
		return Written{}, err
	}
	md := obj.Metadata()
	generate, _ := md["generateName"].(string)
	if obj.Name() == "" && generate == "" {
		return Written{}, apierror.Invalid(res.Group, res.Kind, "", []api.StatusCause{
			apierror.Field(api.CauseTypeFieldValueRequired, "metadata.name", "Required value: name or generateName is required"),
		})
	}
	generated := obj.Name() == ""
	for attempt := 0; ; attempt++ {
		if generated {
			md["name"] = generate + GenerateSuffix()
		}
		// Once named: defaulting (a namespace's name label) and Prepare
		// may use the name.
		if err := r.initMeta(ctx, res, obj); err != nil {
			return Written{}, err
		}
		out, err := r.createOnce(ctx, res, obj)
		if errors.Is(err, storage.ErrKeyExists) && generated && attempt < generateNameAttempts {
			continue
		}
		if err != nil {
			return out, err
		}
		return readBack(ctx, res, out)
	}
}

// initMeta sets the fields the server owns on a new object, and prunes
// and defaults it.
func (r *Registry) initMeta(ctx context.Context, res *resource.Resource, obj api.Object) error {
	md := obj.Metadata()
	md["uid"] = NewUID()
	md["creationTimestamp"] = api.NewTime(r.now()).Format("2006-01-02T15:04:05Z")
	if res.Generation {
		md["generation"] = 1
	}
	for _, f := range []string{"resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds", "selfLink"} {
		delete(md, f)
	}
	if res.StatusSubresource {
		delete(obj, "status")
		if res.Definition != "" && res.PruneAndDefault != nil {
			// kube resets a built-in's status to its Go type's zero value,
			// which encodes as the schema's defaults of an empty status
			// (a Service's {"loadBalancer": {}}): DecodeFields gives them.
			obj["status"] = map[string]any{}
		}
	}
	// One walk after the reset for what admission changed and the status.
	if err := DecodeFields(ctx, res, obj); err != nil {
		return err
	}
	if res.Prepare != nil {
		res.Prepare(obj, nil)
	}
	if res.PrepareCreate != nil {
		res.PrepareCreate(ctx, obj)
	}
	return nil
}

func (r *Registry) createOnce(ctx context.Context, res *resource.Resource, obj api.Object) (Written, error) {
	finish, err := allocate(ctx, res, obj, nil)
	if err != nil {
		return Written{}, err
	}
	out, err := r.createAllocated(ctx, res, obj)
	finish(err == nil)
	return out, err
}

// allocate calls res.Allocate, if any; finish is to be called with
// whether the write stored obj.
func allocate(ctx context.Context, res *resource.Resource, obj, old api.Object) (finish func(stored bool), err error) {
	if res.Allocate == nil {
		return func(bool) {}, nil
	}
	return res.Allocate(ctx, obj, old)
}

func (r *Registry) createAllocated(ctx context.Context, res *resource.Resource, obj api.Object) (Written, error) {
	if err := validate(ctx, res, obj, nil); err != nil {
		return Written{}, err
	}
	if res.OmitEmpty != nil {
		res.OmitEmpty(obj)
	}
	if err := admit(ctx, obj, nil); err != nil {
		return Written{}, err
	}
	value, stored, err := encodeFor(ctx, res, obj)
	if err != nil {
		return Written{}, err
	}
	// Again, right before the write: validation, admission and webhooks
	// may have taken long enough for the namespace to be marked (or
	// gone), and the namespace controller deletes content only
	// namespaceDeletionGracePeriod after the mark.
	if err := r.checkNamespace(ctx, res, obj.Namespace(), obj); err != nil {
		return Written{}, err
	}
	key := res.Key(obj.Namespace(), obj.Name())
	rev, err := r.writer(ctx).Create(ctx, key, value)
	if err != nil {
		if errors.Is(err, storage.ErrKeyExists) {
			return Written{}, errors.Join(err, apierror.AlreadyExists(target(res, obj.Name())))
		}
		return Written{}, apierror.FromStorage(err, target(res, obj.Name()))
	}
	if rev == 0 {
		return Written{Object: obj, stored: stored}, nil // a dry run's: kube answers no resourceVersion
	}
	kv := storage.KV{Key: key, Value: value, CreateRevision: rev, ModRevision: rev}
	return Written{Object: withRevision(obj, rev), Stored: kv, stored: stored}, nil
}

// checkNamespace is CheckNamespace for the create of obj, named as
// kube's admission.NewForbidden names it: by its name, else by its
// generateName (not yet generated), else "Unknown".
func (r *Registry) checkNamespace(ctx context.Context, res *resource.Resource, ns string, obj api.Object) error {
	if !res.Namespaced {
		return nil
	}
	return r.CheckNamespace(ctx, res, ns, cmp.Or(obj.Name(), obj.MetaString("generateName"), "Unknown"))
}

// CheckNamespace fails with 404 unless namespace ns exists, and with kube's
// NamespaceLifecycle 403 for a create of res's object name (or of one of
// its subresources) if ns is being deleted; it reads the store, so that no
// create lands after the mark was seen.
func (r *Registry) CheckNamespace(ctx context.Context, res *resource.Resource, ns, name string) error {
	kv, err := r.store.Get(ctx, namespaces.Key("", ns))
	if errors.Is(err, storage.ErrNotFound) {
		return apierror.NotFound(apierror.Target{Resource: "namespaces", Name: ns})
	}
	if err != nil {
		return apierror.FromStorage(err, apierror.Target{Resource: "namespaces", Name: ns})
	}
	// Most namespaces are not being deleted: decode only one that may be.
	if !bytes.Contains(kv.Value, []byte(`"Terminating"`)) {
		return nil
	}
	if cur, err := decode(kv); err != nil || resource.Path(cur, "status", "phase") != "Terminating" {
		return nil
	}
	s := api.NewStatus(http.StatusForbidden, api.StatusReasonForbidden,
		fmt.Sprintf("%s %q is forbidden: unable to create new content in namespace %s because it is being terminated", res.GroupResource(), name, ns))
	s.Details = &api.StatusDetails{Name: name, Group: res.Group, Kind: res.Plural, Causes: []api.StatusCause{{
		Type: CauseNamespaceTerminating, Message: fmt.Sprintf("namespace %s is being terminated", ns), Field: "metadata.namespace",
	}}}
	return &api.StatusError{Status: s}
}

// CauseNamespaceTerminating is the cause of CheckNamespace's 403 for a
// namespace being deleted (kube's v1.NamespaceTerminatingCause).
const CauseNamespaceTerminating api.CauseType = "NamespaceTerminating"

// IsNamespaceTerminating says whether err is CheckNamespace's 403 for a
// namespace being deleted, which controllers making content skip, as
// kube's do.
func IsNamespaceTerminating(err error) bool {
	var se *api.StatusError
	return errors.As(err, &se) && se.Status.Details != nil &&
		slices.ContainsFunc(se.Status.Details.Causes, func(c api.StatusCause) bool { return c.Type == CauseNamespaceTerminating })
}
