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
	// Selector, set for built-in kinds in place of LabelSelector, computes
	// the Scale's selector from the object as the kind's ScaleREST does.
	Selector func(obj map[string]any) string
}

// ScaleName is the definition name of the autoscaling/v1 Scale.
const ScaleName = "io.k8s.api.autoscaling.v1.Scale"

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
