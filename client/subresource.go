package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/client/api"
)

// UpdateStatus replaces obj's status through the status subresource (PUT
// .../name/status): the server keeps the spec it has and takes the status
// from obj; a resourceVersion in obj makes it conditional, as Update.
func (r *Resource[T]) UpdateStatus(ctx context.Context, obj T, opts WriteOptions) (T, error) {
	p, err := r.objectPath(r.objectNamespace(obj), obj.GetName())
	if err != nil {
		var zero T
		return zero, err
	}
	return r.write(ctx, http.MethodPut, p+"/status", obj, opts)
}

// PatchStatus patches the named object's status subresource.
func (r *Resource[T]) PatchStatus(ctx context.Context, name string, pt PatchType, patch []byte, opts PatchOptions) (T, error) {
	return r.patch(ctx, r.namespace, name, "status", pt, patch, opts)
}

// ApplyOptions are the query parameters of a server-side apply.
type ApplyOptions struct {
	// FieldManager names the applier in managedFields (required).
	FieldManager string
	// Force takes the fields other managers own instead of failing with a
	// Conflict that names them.
	Force  bool
	DryRun bool
}

// Apply is server-side apply of obj to the named object (created when
// missing): obj is the whole intent of FieldManager, sent as JSON with the
// apply patch type. obj must carry its apiVersion and kind, and its JSON
// should hold only the fields the manager means to own: a struct field
// without omitempty claims its zero value (use pointers, omitempty, or
// Unstructured).
func (r *Resource[T]) Apply(ctx context.Context, name string, obj T, opts ApplyOptions) (T, error) {
	return r.apply(ctx, name, "", obj, opts)
}

// ApplyStatus is Apply through the status subresource.
func (r *Resource[T]) ApplyStatus(ctx context.Context, name string, obj T, opts ApplyOptions) (T, error) {
	return r.apply(ctx, name, "status", obj, opts)
}

func (r *Resource[T]) apply(ctx context.Context, name, sub string, obj T, opts ApplyOptions) (T, error) {
	var zero T
	if opts.FieldManager == "" {
		return zero, errors.New("apply needs a FieldManager")
	}
	body, err := json.Marshal(obj)
	if err != nil {
		return zero, fmt.Errorf("encoding %T: %w", obj, err)
	}
	var tm api.TypeMeta
	if err := json.Unmarshal(body, &tm); err != nil || tm.APIVersion == "" || tm.Kind == "" {
		return zero, fmt.Errorf("apply of %T needs the object's apiVersion and kind", obj)
	}
	return r.patch(ctx, r.objectNamespace(obj), name, sub, ApplyPatchType, body, PatchOptions{
		WriteOptions: WriteOptions{FieldManager: opts.FieldManager, DryRun: opts.DryRun},
		Force:        opts.Force,
	})
}

// Scale is an autoscaling/v1 Scale: the replica count of a resource with a
// scale subresource (deployments, replicasets, statefulsets,
// replicationcontrollers, custom resources that declare one).
type Scale struct {
	api.TypeMeta `json:",inline"`
	Metadata     api.ObjectMeta `json:"metadata"`
	Spec         ScaleSpec      `json:"spec"`
	Status       ScaleStatus    `json:"status"`
}

// ScaleSpec is the desired replica count.
type ScaleSpec struct {
	Replicas int32 `json:"replicas,omitempty"`
}

// ScaleStatus is the observed replica count and the label selector of the
// replicas, in its string form.
type ScaleStatus struct {
	Replicas int32  `json:"replicas"`
	Selector string `json:"selector,omitempty"`
}

// GetScale reads the named object's scale subresource.
func (r *Resource[T]) GetScale(ctx context.Context, name string) (*Scale, error) {
	p, err := r.objectPath(r.namespace, name)
	if err != nil {
		return nil, err
	}
	resp, err := r.c.do(ctx, &request{method: http.MethodGet, path: p + "/scale"})
	if err != nil {
		return nil, err
	}
	return decode[*Scale](resp.body)
}

// UpdateScale writes the named object's scale subresource; a
// resourceVersion in scale makes it conditional (409 Conflict when the
// object has changed).
func (r *Resource[T]) UpdateScale(ctx context.Context, name string, scale *Scale, opts WriteOptions) (*Scale, error) {
	ns := r.namespace
	if ns == "" {
		ns = scale.Metadata.Namespace
	}
	p, err := r.objectPath(ns, name)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(scale)
	if err != nil {
		return nil, fmt.Errorf("encoding the scale: %w", err)
	}
	resp, err := r.c.do(ctx, &request{method: http.MethodPut, path: p + "/scale", query: opts.values(), body: body})
	if err != nil {
		return nil, err
	}
	return decode[*Scale](resp.body)
}
