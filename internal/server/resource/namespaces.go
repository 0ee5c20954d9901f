package resource

import (
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/validation"
)

func init() {
	namespaces := GVR{"", "v1", "namespaces"}
	strategies[namespaces] = append(strategies[namespaces], func(r *Resource) { r.Parts = namespaceParts })
}

// FinalizerKubernetes is the spec.finalizers entry every namespace is
// created with and the namespace controller removes once the namespace's
// contents are gone.
const FinalizerKubernetes = "kubernetes"

// namespaceParts is a namespace's finalize subresource (kube's
// FinalizeREST), which serves update only: it writes the metadata and the
// spec, keeping the status, and is how spec.finalizers change.
var namespaceParts = map[string]Part{
	"finalize": {
		Write: func(cur, next api.Object) api.Object {
			out := next.DeepCopy()
			out["status"] = cur["status"]
			if spec, _ := out["spec"].(map[string]any); spec != nil && spec["finalizers"] != nil {
				if fins, _ := spec["finalizers"].([]any); len(fins) == 0 {
					delete(spec, "finalizers") // omitempty, as kube's type
				}
			}
			return out
		},
		ValidateUpdate: validation.NamespaceFinalize,
		Prepare:        labelNamespace,
		Verbs:          []string{"update"},
	},
}

// prepareNamespace is kube's namespace strategy: a new namespace is Active
// and has the kubernetes finalizer (added to those it asks for); an update
// keeps spec.finalizers, which only finalize changes. Every write labels
// it with its name.
func prepareNamespace(obj, old api.Object) {
	spec := MapAt(obj, "spec")
	switch {
	case old != nil:
		if fins := Path(old, "spec", "finalizers"); fins != nil {
			spec["finalizers"] = fins
		} else {
			delete(spec, "finalizers")
		}
	default:
		obj["status"] = map[string]any{"phase": "Active"}
		if fins, _ := spec["finalizers"].([]any); !slices.Contains(fins, any(FinalizerKubernetes)) {
			spec["finalizers"] = append(slices.Clone(fins), FinalizerKubernetes)
		}
	}
	labelNamespace(obj, old)
}

// labelNamespace gives a namespace the kubernetes.io/metadata.name label,
// its name as value, as kube's strategy Canonicalize and its v1
// defaulting do on every write.
func labelNamespace(obj, _ api.Object) {
	md := obj.Metadata()
	labels, _ := md["labels"].(map[string]any)
	if labels == nil {
		labels = map[string]any{}
		md["labels"] = labels
	}
	labels[MetadataNameLabel] = obj.Name()
}
