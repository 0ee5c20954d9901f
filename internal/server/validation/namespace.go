package validation

import (
	"context"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// standardFinalizers are the finalizer names kube lets go unqualified
// (core helper.IsStandardFinalizerName).
var standardFinalizers = map[string]bool{"kubernetes": true, "orphan": true, "foregroundDeletion": true}

// namespace is kube's ValidateNamespace beyond the object's metadata:
// each of spec.finalizers is a finalizer name, reported at
// spec.finalizers without its index, as kube does.
func namespace(o api.Object) []api.StatusCause {
	var c causes
	c.finalizerNames(o, func(int) path { return "spec.finalizers" })
	return c
}

// NamespaceFinalize is kube's ValidateNamespaceFinalizeUpdate beyond the
// metadata (the registry's): each of spec.finalizers is a finalizer name,
// reported at its index.
func NamespaceFinalize(_ context.Context, o, _ api.Object) []api.StatusCause {
	var c causes
	c.finalizerNames(o, path("spec.finalizers").index)
	return c
}

// finalizerNames is kube's validateFinalizerName for each of a namespace's
// spec.finalizers, at the path at(i) names: a qualified name, and one
// without a "/" only if standard.
func (c *causes) finalizerNames(o api.Object, at func(i int) path) {
	fins, _ := object(o, "spec")["finalizers"].([]any)
	for i, f := range fins {
		name, _ := f.(string)
		c.qualifiedName(at(i), name)
		if !strings.Contains(name, "/") && !standardFinalizers[name] {
			c.invalid(at(i), name, "name is neither a standard finalizer name nor is it fully qualified")
		}
	}
}

// namespaceStatusUpdate is kube's ValidateNamespaceStatusUpdate beyond the
// metadata: the phase is Active until the namespace's deletion and
// Terminating after, so that the namespace controller's state holds.
func namespaceStatusUpdate(_ context.Context, o, _ api.Object) []api.StatusCause {
	var c causes
	phase := str(object(o, "status"), "phase")
	switch deleting := object(o, "metadata")["deletionTimestamp"] != nil; {
	case !deleting && phase != "Active":
		c.invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty")
	case deleting && phase != "Terminating":
		c.invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty")
	}
	return c
}
