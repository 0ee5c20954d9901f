package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/spec3"
)

// mapCase is mutating policies, each bound once (with paramRef, if set),
// and a ConfigMap created in namespace default under them.
type mapCase struct {
	name string
	// codeOnly compares the codes of errors only, for kube's messages
	// that show its internal Go values or json-patch v4's words.
	codeOnly bool
	policies []admissionregistrationv1.MutatingAdmissionPolicySpec
	ref      *admissionregistrationv1.ParamRef
	object   map[string]string // the ConfigMap's data
	labels   map[string]string
}

// mapOutcome is what a create got: the error's code and message, or the
// object as created.
type mapOutcome struct {
	Code        int32
	Message     string
	Labels      map[string]string
	Annotations map[string]string
	Finalizers  []string
	Data        map[string]string
}

// TestMutatingAdmissionPolicyAsKube: over a table of mutating policies
// and objects, the binary's answer to a ConfigMap create (the object as
// created, or the error's code and message) equals what kube's own
// MutatingAdmissionPolicy dispatcher (k8s.io/apiserver/pkg/admission/
// plugin/policy/mutating, with its matcher, CEL compiler and
// structured-merge-diff patcher) makes of the same create, run through
// kube's reinvoker.
func TestMutatingAdmissionPolicyAsKube(t *testing.T) {
	equivalent := admissionregistrationv1.Equivalent
	never := admissionregistrationv1.NeverReinvocationPolicy
	ignore := admissionregistrationv1.Ignore
	denyMissing := admissionregistrationv1.DenyAction
	apply := func(expr string) admissionregistrationv1.Mutation {
		return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expr}}
	}
	jsonPatch := func(expr string) admissionregistrationv1.Mutation {
		return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expr}}
	}
	policy := func(m ...admissionregistrationv1.Mutation) admissionregistrationv1.MutatingAdmissionPolicySpec {
		return admissionregistrationv1.MutatingAdmissionPolicySpec{Mutations: m, ReinvocationPolicy: never}
	}
	paramKind := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	withParams := policy(apply(`Object{data: {"owner": params.data.owner}}`))
	withParams.ParamKind = paramKind
	ignored := policy(apply(`Object{data: {"x": object.data.missing}}`))
	ignored.FailurePolicy = &ignore
	conditional := policy(apply(`Object{metadata: Object.metadata{labels: {"matched": "yes"}}}`))
	conditional.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "has-x", Expression: "'x' in object.data"}}
	noNamespace := policy(apply(`Object{data: {"namespace": namespaceObject.metadata.name}}`))
	noNamespace.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "no-namespace", Expression: "namespaceObject == null"}}
	withVariables := policy(jsonPatch(`[JSONPatch{op: "add", path: "/data/size", value: string(variables.size)}]`))
	withVariables.Variables = []admissionregistrationv1.Variable{{Name: "size", Expression: "size(object.data)"}}
	seesB := policy(apply(`Object{metadata: Object.metadata{annotations: {"seen": "b" in object.metadata.labels ? object.metadata.labels["b"] : "none"}}}`))
	seesB.ReinvocationPolicy = admissionregistrationv1.IfNeededReinvocationPolicy
	cases := []mapCase{
		{name: "apply configuration", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			policy(apply(`Object{metadata: Object.metadata{labels: {"added": "yes"}, finalizers: ["example.com/f"]}, data: {"k": "new", "n": "1"}}`))},
			object: map[string]string{"k": "old", "other": "kept"}},
		{name: "apply configuration sets null", codeOnly: true, policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			policy(apply(`Object{data: {"k": null}}`))}, object: map[string]string{"k": "old", "other": "kept"}},
		{name: "json patch", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			policy(jsonPatch(`[JSONPatch{op: "add", path: "/metadata/annotations", value: {}}, ` +
				`JSONPatch{op: "add", path: "/metadata/annotations/" + jsonpatch.escapeKey("example.com/owner"), value: "v"}, ` +
				`JSONPatch{op: "remove", path: "/data/gone"}, JSONPatch{op: "copy", from: "/data/k", path: "/data/copy"}]`))},
			object: map[string]string{"k": "v", "gone": "x"}},
		{name: "json patch test fails", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			policy(jsonPatch(`[JSONPatch{op: "test", path: "/data/k", value: "no"}, JSONPatch{op: "add", path: "/data/k2", value: "v"}]`))},
			object: map[string]string{"k": "v"}},
		{name: "json patch fails", codeOnly: true, policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			policy(jsonPatch(`[JSONPatch{op: "remove", path: "/data/none"}]`))}, object: map[string]string{"k": "v"}},
		{name: "params", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{withParams},
			ref: &admissionregistrationv1.ParamRef{Name: "map-owner", ParameterNotFoundAction: &denyMissing}, object: map[string]string{"k": "v"}},
		{name: "evaluation error", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			policy(apply(`Object{data: {"x": object.data.missing}}`))}, object: map[string]string{"k": "v"}},
		{name: "evaluation error ignored", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{ignored}, object: map[string]string{"k": "v"}},
		{name: "wrong type name", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			policy(apply(`Object{metadata: Object.meta{labels: {"a": "b"}}}`))}, object: map[string]string{"k": "v"}},
		{name: "match condition false", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{conditional}, object: map[string]string{"k": "v"}},
		{name: "match condition true", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{conditional}, object: map[string]string{"x": "v"}},
		// kube's matcher evaluates match conditions without the namespace.
		{name: "match condition without namespace", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{noNamespace}, object: map[string]string{"k": "v"}},
		{name: "variables", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{withVariables}, object: map[string]string{"a": "1", "b": "2"}},
		// kube orders policies as a map does, at random: an IfNeeded policy
		// sees the other's change in either order, a Never one would not.
		{name: "reinvocation", policies: []admissionregistrationv1.MutatingAdmissionPolicySpec{
			seesB, policy(apply(`Object{metadata: Object.metadata{labels: {"b": "set"}}}`))},
			object: map[string]string{"k": "v"}},
	}
	for i := range cases {
		for j := range cases[i].policies {
			p := &cases[i].policies[j]
			// kube's v1 defaults, which its API server sets before the plugin
			// reads a policy; each case's policies see only its objects.
			p.MatchConstraints = &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, MatchPolicy: &equivalent,
				ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"case": fmt.Sprint(i)}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}, Scope: ptrTo(admissionregistrationv1.AllScopes)},
				}}}}
			if p.FailurePolicy == nil {
				fail := admissionregistrationv1.Fail
				p.FailurePolicy = &fail
			}
		}
	}
	params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "map-owner", Namespace: "default"}, Data: map[string]string{"owner": "team-a"}}

	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	// Policies and objects go in protobuf, as kube's components write.
	admin := typedClientset(t, lw.URL)
	ours := ourMAPOutcomes(t, admin, cases, params)
	// kube's patcher merges by the types of the OpenAPI the server serves
	// (its type converter manager reads it): ours, for ConfigMaps.
	converter := configMapTypeConverter(t, admin)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := kubeMAPOutcome(t, i, c, params, patch.NewTypeConverterManager(converter, admin.Discovery().OpenAPIV3()))
			if c.codeOnly {
				want.Message, ours[i].Message = "", ""
			}
			if diff := cmp.Diff(want, ours[i]); diff != "" {
				t.Errorf("(-kube +listwatch):\n%s", diff)
			}
		})
	}
}

func mapObjects(i int, c mapCase) ([]*admissionregistrationv1.MutatingAdmissionPolicy, []*admissionregistrationv1.MutatingAdmissionPolicyBinding, *corev1.ConfigMap) {
	var policies []*admissionregistrationv1.MutatingAdmissionPolicy
	var bindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	for j, spec := range c.policies {
		name := fmt.Sprintf("case-%d-%d", i, j)
		policies = append(policies, &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: *spec.DeepCopy()})
		bindings = append(bindings, &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
			Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: name, ParamRef: c.ref}})
	}
	labels := map[string]string{"case": fmt.Sprint(i)}
	for k, v := range c.labels {
		labels[k] = v
	}
	return policies, bindings, &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "object-" + fmt.Sprint(i), Namespace: "default", Labels: labels}, Data: c.object}
}

func mapOutcomeOf(cm *corev1.ConfigMap, err error) mapOutcome {
	if err != nil {
		o := outcome(err, &warnings{})
		return mapOutcome{Code: o.Code, Message: o.Message}
	}
	return mapOutcome{Labels: cm.Labels, Annotations: cm.Annotations, Finalizers: cm.Finalizers, Data: cm.Data}
}

// ourMAPOutcomes creates each case's policies, bindings and object
// through the binary.
func ourMAPOutcomes(t *testing.T, admin kubernetes.Interface, cases []mapCase, params *corev1.ConfigMap) []mapOutcome {
	ctx := t.Context()
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, params, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := make([]mapOutcome, len(cases))
	for i, c := range cases {
		policies, bindings, obj := mapObjects(i, c)
		for j := range policies {
			// Created with kube's defaults, each comes back as sent.
			p, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicies().Create(ctx, policies[j], metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			b, err := admin.AdmissionregistrationV1().MutatingAdmissionPolicyBindings().Create(ctx, bindings[j], metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("%s: %v", c.name, err)
			}
			if diff := cmp.Diff(policies[j].Spec, p.Spec); diff != "" || p.Generation != 1 {
				t.Errorf("%s: policy at generation %d, spec (-sent +created):\n%s", c.name, p.Generation, diff)
			}
			if diff := cmp.Diff(bindings[j].Spec, b.Spec); diff != "" {
				t.Errorf("%s: binding spec (-sent +created):\n%s", c.name, diff)
			}
		}
		out[i] = mapOutcomeOf(admin.CoreV1().ConfigMaps("default").Create(ctx, obj, metav1.CreateOptions{}))
	}
	return out
}

// configMapTypeConverter is kube's type converter over the core/v1
// OpenAPI v3 document the server serves.
func configMapTypeConverter(t *testing.T, cs kubernetes.Interface) managedfields.TypeConverter {
	paths, err := cs.Discovery().OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	gv, ok := paths["api/v1"]
	if !ok {
		t.Fatal("no OpenAPI v3 document of api/v1")
	}
	b, err := gv.Schema("application/json")
	if err != nil {
		t.Fatal(err)
	}
	var doc spec3.OpenAPI
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	tc, err := managedfields.NewTypeConverter(doc.Components.Schemas, false)
	if err != nil {
		t.Fatal(err)
	}
	return tc
}

// kubeMAPOutcome dispatches the case's create through kube's plugin, and
// once more if it asks to be reinvoked, as kube's admission chain does.
func kubeMAPOutcome(t *testing.T, i int, c mapCase, params *corev1.ConfigMap, types patch.TypeConverterManager) mapOutcome {
	tc := startKubePolicies(t, mutating.NewMutatingAdmissionPolicyAccessor, mutating.NewMutatingAdmissionPolicyBindingAccessor, kubeCompileMutatingPolicy,
		func(a authorizer.UnconditionalAuthorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[mutating.PolicyHook] {
			return mutating.NewDispatcher(a, m, types)
		})
	policies, bindings, obj := mapObjects(i, c)
	for j := range policies {
		if err := tc.UpdateAndWait(policies[j], bindings[j]); err != nil {
			t.Fatal(err)
		}
	}
	if c.ref != nil {
		if err := tc.UpdateAndWait(params.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	attr := admission.NewAttributesRecord(obj, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", obj.Name,
		corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	ctx, stop := context.WithTimeout(tc, 10*time.Second)
	defer stop()
	o := admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme)
	err := tc.Plugin.Dispatch(ctx, attr, o)
	if rc := attr.GetReinvocationContext(); err == nil && rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		err = tc.Plugin.Dispatch(ctx, attr, o)
	}
	return mapOutcomeOf(attr.GetObject().(*corev1.ConfigMap), err)
}

// kubeCompileMutatingPolicy is kube's compilePolicy (mutating/
// compilation.go, not exported), from the exported parts it is made of.
func kubeCompileMutatingPolicy(p *mutating.Policy) mutating.PolicyEvaluator {
	opts := cel.OptionalVariableDeclarations{HasParams: p.Spec.ParamKind != nil, HasAuthorizer: true}
	compiler, matcher, err := kubePolicyCompiler(p.Name, p.Spec.Variables, p.Spec.MatchConditions, p.Spec.FailurePolicy, opts,
		func(v admissionregistrationv1.Variable) cel.NamedExpressionAccessor {
			return &mutating.Variable{Name: v.Name, Expression: v.Expression}
		})
	if err != nil {
		return mutating.PolicyEvaluator{Error: err}
	}
	patchOpts := opts
	patchOpts.HasPatchTypes = true
	var patchers []patch.Patcher
	for _, m := range p.Spec.Mutations {
		switch m.PatchType {
		case admissionregistrationv1.PatchTypeJSONPatch:
			patchers = append(patchers, patch.NewJSONPatcher(compiler.CompileMutatingEvaluator(&patch.JSONPatchCondition{Expression: m.JSONPatch.Expression}, patchOpts, environment.StoredExpressions)))
		case admissionregistrationv1.PatchTypeApplyConfiguration:
			patchers = append(patchers, patch.NewApplyConfigurationPatcher(compiler.CompileMutatingEvaluator(&patch.ApplyConfigurationCondition{Expression: m.ApplyConfiguration.Expression}, patchOpts, environment.StoredExpressions)))
		}
	}
	return mutating.PolicyEvaluator{Matcher: matcher, Mutators: patchers, CompositedCompiler: compiler}
}
