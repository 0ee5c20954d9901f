package validation

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubefmt"
	"github.com/listwatch/listwatch/internal/quantity"
)

// nodeStatusUpdate is kube's ValidateNodeUpdate as the node status
// strategy runs it, on the stored spec: its status rules (capacity and
// allocatable quantities, declared features, addresses not twice). Its
// spec rules compare the spec with itself, but for the stored taints'
// own rules, not replicated, as our Node validation is not; the
// annotations' taints and preferAvoidPods (deprecated) are not either,
// and status.config, which a status write may set only when the stored
// one has it and a create never stores, is not checked.
func nodeStatusUpdate(_ context.Context, o, _ api.Object) []api.StatusCause {
	var c causes
	status, p := object(o, "status"), path("status")
	for _, f := range []string{"capacity", "allocatable"} {
		resources := object(status, f)
		for _, name := range slices.Sorted(maps.Keys(resources)) {
			q, _ := resources[name].(string)
			c.resourceQuantityValue(p.child(f, name), name, q)
		}
	}
	c.declaredFeatures(p.child("declaredFeatures"), list(status, "declaredFeatures"))
	type address struct{ Type, Address string } // rendered as kube's internal type
	seen := map[address]bool{}
	for i, a := range list(status, "addresses") {
		a, _ := a.(map[string]any)
		key := address{str(a, "type"), str(a, "address")}
		if seen[key] {
			c.duplicate(p.child("addresses").index(i), key)
		}
		seen[key] = true
	}
	return c
}

// resourceQuantityValue is kube's ValidateResourceQuantityValue: not
// negative, and a whole number for the resources counted in units.
func (c *causes) resourceQuantityValue(p path, name, text string) {
	q, err := quantity.Parse(text)
	if err != nil {
		return // the schema's quantity format refused it
	}
	if q.Sign() < 0 {
		c.invalid(p, q.String(), "must be greater than or equal to 0")
	}
	if integerResource(name) && q.MilliValue()%1000 != 0 {
		c.invalid(p, q.String(), "must be an integer")
	}
}

// integerResources are kube's resources measured in whole units
// (helper.integerResources), besides the extended ones.
var integerResources = map[string]bool{
	"pods": true, "resourcequotas": true, "services": true, "replicationcontrollers": true, "secrets": true,
	"configmaps": true, "persistentvolumeclaims": true, "services.nodeports": true, "services.loadbalancers": true,
}

// integerResource is kube's helper.IsIntegerResourceName.
func integerResource(name string) bool {
	return integerResources[name] || extendedResource(name)
}

// extendedResource is kube's helper.IsExtendedResourceName: not native
// (prefixed by a domain other than kubernetes.io), not a quota's
// "requests." name, and a qualified name once so prefixed.
func extendedResource(name string) bool {
	return !nativeResource(name) && !strings.HasPrefix(name, "requests.") && len(kubefmt.LabelKey("requests."+name)) == 0
}

var nodeFeatureRE = regexp.MustCompile(`^[A-Z][a-zA-Z0-9]*(\/[a-zA-Z][a-zA-Z0-9]*)*$`)

// declaredFeatures is kube's validateNodeDeclaredFeatures: valid names,
// sorted, none twice.
func (c *causes) declaredFeatures(p path, features []any) {
	for i, f := range features {
		name, _ := f.(string)
		switch {
		case len(name) > 253:
			c.invalid(p.index(i), name, fmt.Sprintf("invalid feature name %q: must be no more than 253 characters", name))
		case !nodeFeatureRE.MatchString(name):
			c.invalid(p.index(i), name, fmt.Sprintf("invalid feature name %q: must start with an UpperCamelCase segment, with subsequent segments separated by '/' (e.g., MyFeature or MyFeature/mySubFeature), and contain only alphanumeric characters and slashes", name))
		}
		if i+1 == len(features) {
			continue
		}
		switch next, _ := features[i+1].(string); {
		case name == next:
			c.duplicate(p.index(i+1), next)
		case name > next:
			c.invalid(p.index(i+1), next, "list must be sorted alphabetically")
		}
	}
}
