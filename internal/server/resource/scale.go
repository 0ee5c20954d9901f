package resource

import (
	"encoding/json"
	"fmt"
	"strings"
)

// ScalePaths are the JSON paths (".spec.replicas") of a resource's scale
// subresource; LabelSelector is "" when the Scale has no selector.
// Columns are the Table columns of the Scale itself, nil where the Scale
// is served as no Table.
type ScalePaths struct {
	SpecReplicas, StatusReplicas, LabelSelector string
	Columns                                     []Column
}

// ScaleName is the definition name of the autoscaling/v1 Scale.
const ScaleName = "io.k8s.api.autoscaling.v1.Scale"

// scaleDefinitions are the Scale's schemas, as kube's OpenAPI documents
// them (descriptions from k8s.io/api, defaults of its generator).
func scaleDefinitions() map[string]map[string]any {
	zero := func(s map[string]any) map[string]any { return with(s, "default", map[string]any{}) }
	s := kind("autoscaling", "v1", "Scale", "Scale represents a scaling request for a resource.", map[string]any{
		"spec":   zero(ref(ScaleName+"Spec", "spec defines the behavior of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status.")),
		"status": zero(ref(ScaleName+"Status", "status is the current status of the scale. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status. Read-only.")),
	})
	props := s["properties"].(map[string]any)
	props["metadata"] = zero(ref(ObjectMetaName, "metadata is the standard object metadata; More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata."))
	props["apiVersion"] = str("APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources")
	props["kind"] = str("Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds")
	replicas := func(desc string) map[string]any { return with(int32f(desc), "default", 0) }
	return map[string]map[string]any{
		ScaleName: s,
		ScaleName + "Spec": object("ScaleSpec describes the attributes of a scale subresource.", map[string]any{
			"replicas": replicas("replicas is the desired number of instances for the scaled object."),
		}),
		ScaleName + "Status": object("ScaleStatus represents the current status of a scale subresource.", map[string]any{
			"replicas": replicas("replicas is the actual number of observed instances of the scaled object."),
			"selector": str("selector is the label query over pods that should match the replicas count. This is same as the label selector but in the string format to avoid introspection by clients. The string will be in the same format as the query-param syntax. More info about label selectors: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/"),
		}, "replicas"),
	}
}

// ScaleSubresource is the scale subresource as discovery lists it.
var ScaleSubresource = Subresource{Name: "scale", Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "patch", "update"}}

// SplitPath splits a scale path (".spec.replicas") into its keys.
func SplitPath(p string) []string { return strings.Split(strings.TrimPrefix(p, "."), ".") }

// Replicas reads the integer at path in obj as kube's
// unstructured.NestedInt64 does: found is false when it is absent, err
// (with kube's text) when it is not an integer.
func Replicas(obj map[string]any, path string) (n int64, found bool, err error) {
	v := Path(obj, SplitPath(path)...)
	if v == nil {
		return 0, false, nil
	}
	if num, ok := v.(json.Number); ok {
		if n, err := num.Int64(); err == nil {
			return n, true, nil
		}
		v, _ = num.Float64() // what kube's decoder makes of it
	}
	return 0, true, fmt.Errorf("%s accessor error: %v is of the type %T, expected int64", path, v, v)
}
