package server

import (
	"fmt"
	"net/http"
	"testing"
)

// BenchmarkCreatePolicies creates 1 KiB ConfigMaps under 0 and 5
// ValidatingAdmissionPolicies that match them, each with a variable, two
// validations and one binding: the policies' share of a create.
func BenchmarkCreatePolicies(b *testing.B) {
	for _, n := range []int{0, 5} {
		b.Run(fmt.Sprintf("policies=%d", n), func(b *testing.B) {
			h := benchServer(b)
			for i := range n {
				serveBench(b, h, http.MethodPost, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{
					"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]}]},
					"variables":[{"name":"pad","expression":"object.data.pad"}],
					"validations":[{"expression":"size(variables.pad) < 4096"},{"expression":"object.metadata.name.startsWith('c')","messageExpression":"'bad name ' + object.metadata.name"}]}}`, i), http.StatusCreated)
				serveBench(b, h, http.MethodPost, "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
					fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{"policyName":"p%d","validationActions":["Deny"]}}`, i, i), http.StatusCreated)
			}
			benchCreate(b, h)
		})
	}
}

// BenchmarkCreateMutatingPolicies creates 1 KiB ConfigMaps under 5
// MutatingAdmissionPolicies that match them: 4 add a label by an apply
// configuration, one an annotation by a JSON patch.
func BenchmarkCreateMutatingPolicies(b *testing.B) {
	h := benchServer(b)
	for i := range 5 {
		mutation := fmt.Sprintf(`{"patchType":"ApplyConfiguration","applyConfiguration":{"expression":"Object{metadata: Object.metadata{labels: {'p%d': 'yes'}}}"}}`, i)
		if i == 4 {
			mutation = `{"patchType":"JSONPatch","jsonPatch":{"expression":"[JSONPatch{op: 'add', path: '/metadata/annotations', value: {'size': string(size(object.data.pad))}}]"}}`
		}
		serveBench(b, h, http.MethodPost, "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies", fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{
			"reinvocationPolicy":"Never","matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE","UPDATE"],"resources":["configmaps"]}]},
			"mutations":[%s]}}`, i, mutation), http.StatusCreated)
		serveBench(b, h, http.MethodPost, "/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
			fmt.Sprintf(`{"metadata":{"name":"p%d"},"spec":{"policyName":"p%d"}}`, i, i), http.StatusCreated)
	}
	benchCreate(b, h)
}
