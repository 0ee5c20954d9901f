package resource

import (
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// mutatingPolicies are admissionregistration.k8s.io/v1's
// MutatingAdmissionPolicy and MutatingAdmissionPolicyBinding,
// cluster-scoped, with a generation and no status, defaulted as kube's v1
// defaults.go and validated as kube's validateMutatingAdmissionPolicySpec
// and validateMutatingAdmissionPolicyBindingSpec, CEL expressions aside
// (the server compiles them).
func mutatingPolicies() []*Resource {
	return []*Resource{
		{
			Group: AdmissionGroup, Version: "v1", Plural: "mutatingadmissionpolicies",
			Validate: validateMutatingPolicy,
			Columns: []Column{
				column("Mutations", "integer", "", "Mutation indicates the number of mutations rules defined in this configuration", func(o api.Object) any {
					l, _ := specOf(o)["mutations"].([]any)
					return len(l)
				}),
				paramKindColumn,
				ageColumn(),
			},
		},
		{
			Group: AdmissionGroup, Version: "v1", Plural: "mutatingadmissionpolicybindings",
			Validate: validateMutatingPolicyBinding,
			Columns:  []Column{policyNameColumn, paramRefColumn, ageColumn()},
		},
	}
}

// The values kube's validation of mutating policies supports.
var (
	mutatingOperations = []string{"*", "CONNECT", "CREATE", "UPDATE"}
	mutationPatchTypes = []string{"ApplyConfiguration", "JSONPatch"}
)

// validateMutatingPolicy is kube's validateMutatingAdmissionPolicySpec
// without the compilation of expressions.
func validateMutatingPolicy(obj api.Object) []api.StatusCause {
	c := &checker{}
	spec := c.policySpec(obj)
	if mc, ok := spec["matchConstraints"].(map[string]any); ok {
		c.mutatingOperations(mc, "spec.matchConstraints")
	}
	mutations := c.list(spec["mutations"], "spec.mutations")
	if len(mutations) == 0 {
		c.required("spec.mutations", "mutations must contain at least one item")
	}
	for i, m := range mutations {
		p := fmt.Sprintf("spec.mutations[%d]", i)
		c.mutation(c.object(m, p), p)
	}
	if spec["reinvocationPolicy"] == nil || spec["reinvocationPolicy"] == "" {
		c.required("spec.reinvocationPolicy", "")
	} else {
		c.oneOf(spec, "reinvocationPolicy", "spec", reinvocationPolicies)
	}
	return c.causes
}

// mutatingOperations rejects rules of operations other than CREATE,
// UPDATE and CONNECT, which no mutation could act on.
func (c *checker) mutatingOperations(mr map[string]any, p string) {
	for _, r := range c.list(mr["resourceRules"], p+".resourceRules") {
		rule, _ := r.(map[string]any)
		ops, _ := rule["operations"].([]any)
		for _, op := range ops {
			if s, _ := op.(string); !contains(mutatingOperations, s) {
				c.notSupported(p+".resourceRules.operations", s, mutatingOperations...)
			}
		}
	}
}

// mutation is kube's validateMutation, expressions not compiled.
func (c *checker) mutation(m map[string]any, p string) {
	pt := c.string(m["patchType"], p+".patchType")
	own, other := "applyConfiguration", "jsonPatch"
	switch pt {
	case "":
		c.required(p+".patchType", "")
		return
	case "JSONPatch":
		own, other = other, own
	case "ApplyConfiguration":
	default:
		c.notSupported(p+".patchType", pt, mutationPatchTypes...)
		return
	}
	if m[own] == nil {
		c.required(p+"."+own, "must be specified when patchType is "+pt)
	} else if strings.TrimSpace(c.string(c.object(m[own], p+"."+own)["expression"], p+"."+own+".expression")) == "" {
		c.required(p+"."+own+".expression", "")
	}
	if m[other] != nil {
		c.invalid(p+"."+other, "{"+other+"}", "must not be specified when patchType is "+pt)
	}
}

// validateMutatingPolicyBinding is kube's
// validateMutatingAdmissionPolicyBindingSpec.
func validateMutatingPolicyBinding(obj api.Object) []api.StatusCause {
	c := &checker{}
	spec := c.bindingSpec(obj)
	if mr, ok := spec["matchResources"].(map[string]any); ok {
		c.mutatingOperations(mr, "spec.matchResources")
	}
	return c.causes
}
