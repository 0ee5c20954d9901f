package defaulting

import (
	"encoding/json"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listwatch/listwatch/internal/quantity"
)

// resourceList is SetDefaults_ResourceList: each quantity finer than a
// milli-unit is rounded up (away from zero) to one, and written as kube's
// Quantity encodes it.
var resourceList = &node{set: func(m map[string]any) {
	for k, v := range m {
		if q, ok := ParseQuantity(v); ok {
			q.RoundUp(resource.Milli)
			m[k] = q.String()
		}
	}
}}

// resources is a ResourceRequirements: its limits and requests.
var resources = &node{fields: []field{val("limits", resourceList), val("requests", resourceList)}}

// ParseQuantity reads a quantity of an object's JSON (a string, or a
// number) as kube's decoder does; ok is false when it is not one, or spans
// more than quantity.MaxSpan places (left as it is written).
func ParseQuantity(v any) (resource.Quantity, bool) {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.Number:
		text = string(v)
	default:
		return resource.Quantity{}, false
	}
	q, err := quantity.Parse(strings.TrimSpace(text))
	return q, err == nil
}

// CanonicalQuantity is the text kube stores for the quantity v: what its
// Quantity type encodes after decoding v (the text itself when it is in
// canonical form, else the canonical form of its value); ok is false when
// v is not a quantity, which validation refuses.
func CanonicalQuantity(v any) (string, bool) {
	q, ok := ParseQuantity(v)
	if !ok {
		return "", false
	}
	return q.String(), true
}
