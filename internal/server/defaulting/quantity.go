package defaulting

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
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

// maxQuantitySpan bounds the decimal places a quantity's value may span
// (its digits and the magnitude of its exponent): kube's parser expands
// the value to nano precision, which takes minutes for "1e2147483647"; a
// quantity past the bound is left as it is written.
const maxQuantitySpan = 4096

// ParseQuantity reads a quantity of an object's JSON (a string, or a
// number) as kube's decoder does; ok is false when it is not one, or spans
// more than maxQuantitySpan places.
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
	text = strings.TrimSpace(text)
	if quantitySpan(text) > maxQuantitySpan {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(text)
	return q, err == nil
}

// quantitySpan is how many decimal places the quantity s spans at most:
// its length, plus the magnitude of its exponent when it has one ("1e-9"),
// which kube reads as an int64 and keeps the low 32 bits of.
func quantitySpan(s string) int {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return len(s)
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil { // a suffix (E, Ei), or one kube refuses
		return len(s)
	}
	return len(s) + int(math.Abs(float64(int32(n))))
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
