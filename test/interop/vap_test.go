package interop

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/cel/environment"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// vapCase is a policy, its binding's actions and paramRef, and a
// ConfigMap created in namespace default under them.
type vapCase struct {
	name    string
	spec    admissionregistrationv1.ValidatingAdmissionPolicySpec
	actions []admissionregistrationv1.ValidationAction
	ref     *admissionregistrationv1.ParamRef
	object  map[string]string // the ConfigMap's data
	labels  map[string]string
}

// vapOutcome is what a write got: the error's code and message, and the
// warnings.
type vapOutcome struct {
	Code     int32
	Message  string
	Warnings []string
}

// TestValidatingAdmissionPolicyAsKube: over a table of policies and
// objects, the binary's answer to a ConfigMap create (code, message,
// warnings) equals the one kube's own ValidatingAdmissionPolicy
// dispatcher (k8s.io/apiserver/pkg/admission/plugin/policy/validating,
// with its matcher and CEL compiler) gives for the same policy, binding,
// params and object.
func TestValidatingAdmissionPolicyAsKube(t *testing.T) {
	equivalent := admissionregistrationv1.Equivalent
	// kube's v1 defaults, which its API server sets before the plugin reads
	// a policy.
	rules := func() *admissionregistrationv1.MatchResources {
		return &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{}, MatchPolicy: &equivalent, ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
			RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}}}}
	}
	v := func(expr, msg, msgExpr string, reason metav1.StatusReason) admissionregistrationv1.Validation {
		out := admissionregistrationv1.Validation{Expression: expr, Message: msg, MessageExpression: msgExpr}
		if reason != "" {
			out.Reason = &reason
		}
		return out
	}
	ignore := admissionregistrationv1.Ignore
	deny := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	warn := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
	denyMissing, allowMissing := admissionregistrationv1.DenyAction, admissionregistrationv1.AllowAction
	paramKind := &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	cases := []vapCase{
		{name: "plain", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("object.data.x == 'ok'", "", "", "")}}, actions: deny, object: map[string]string{"x": "bad"}},
		{name: "passes", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("object.data.x == 'ok'", "", "", "")}}, actions: deny, object: map[string]string{"x": "ok"}},
		{name: "message and reason", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("size(object.data) < 2", "  too big  ", "", metav1.StatusReasonForbidden)}},
			actions: deny, object: map[string]string{"a": "1", "b": "2"}},
		{name: "message expression and variables", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Variables:   []admissionregistrationv1.Variable{{Name: "keys", Expression: "size(object.data)"}, {Name: "twice", Expression: "variables.keys * 2"}},
			Validations: []admissionregistrationv1.Validation{v("variables.twice < 4", "static", "'twice is ' + string(variables.twice)", metav1.StatusReasonRequestEntityTooLarge)}},
			actions: deny, object: map[string]string{"a": "1", "b": "2"}},
		{name: "message expression not a string", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("false", "fallback", "object.data.missing", metav1.StatusReasonUnauthorized)}},
			actions: deny, object: map[string]string{"a": "1"}},
		{name: "evaluation error", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("object.data.missing == 'x'", "", "", "")}}, actions: deny, object: map[string]string{"a": "1"}},
		{name: "evaluation error ignored", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: &ignore,
			Validations: []admissionregistrationv1.Validation{v("object.data.missing == 'x'", "", "", "")}}, actions: deny, object: map[string]string{"a": "1"}},
		{name: "match condition false", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "only-x", Expression: "'x' in object.data"}},
			Validations:     []admissionregistrationv1.Validation{v("false", "", "", "")}}, actions: deny, object: map[string]string{"a": "1"}},
		{name: "match condition error", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "broken", Expression: "object.data.nope == 'x'"}},
			Validations:     []admissionregistrationv1.Validation{v("false", "", "", "")}}, actions: deny, object: map[string]string{"a": "1"}},
		{name: "warn", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("false", "just so you know", "", ""), v("true", "", "", ""), v("1 > 2", "", "", "")}},
			actions: warn, object: map[string]string{"a": "1"}},
		{name: "request and namespace", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("request.operation == 'UPDATE'", "", "request.kind.kind + ' in ' + namespaceObject.metadata.name + ' ' + request.resource.resource", "")}},
			actions: deny, object: map[string]string{"a": "1"}},
		{name: "params", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: paramKind,
			Validations: []admissionregistrationv1.Validation{v("size(object.data) <= int(params.data.max)", "", "'at most ' + params.data.max", "")}},
			ref: &admissionregistrationv1.ParamRef{Name: "vap-limits", ParameterNotFoundAction: &denyMissing}, actions: deny, object: map[string]string{"a": "1", "b": "2"}},
		{name: "params missing denied", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: paramKind,
			Validations: []admissionregistrationv1.Validation{v("false", "", "", "")}},
			ref: &admissionregistrationv1.ParamRef{Name: "nothing", ParameterNotFoundAction: &denyMissing}, actions: deny, object: map[string]string{"a": "1"}},
		{name: "params missing allowed", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: paramKind,
			Validations: []admissionregistrationv1.Validation{v("false", "", "", "")}},
			ref: &admissionregistrationv1.ParamRef{Name: "nothing", ParameterNotFoundAction: &allowMissing}, actions: deny, object: map[string]string{"a": "1"}},
		{name: "params by selector", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{ParamKind: paramKind,
			Validations: []admissionregistrationv1.Validation{v("size(object.data) <= int(params.data.max)", "", "", "")}},
			ref:     &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"role": "limits"}}, ParameterNotFoundAction: &denyMissing},
			actions: deny, object: map[string]string{"a": "1", "b": "2"}},
		{name: "object selector", spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			Validations: []admissionregistrationv1.Validation{v("false", "", "", "")}}, actions: deny, object: map[string]string{"a": "1"}, labels: map[string]string{"skip": "yes"}},
	}
	for i := range cases {
		c := &cases[i]
		c.spec.MatchConstraints = rules()
		// Each case's policy sees only its own objects, so that one
		// server serves the whole table.
		c.spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"case": fmt.Sprint(i)},
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	}
	params := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vap-limits", Namespace: "default", Labels: map[string]string{"role": "limits"}}, Data: map[string]string{"max": "1"}}

	ours := ourVAPOutcomes(t, cases, params)
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want := kubeVAPOutcome(t, i, c, params)
			if diff := cmp.Diff(want, ours[i]); diff != "" {
				t.Errorf("(-kube +listwatch):\n%s", diff)
			}
		})
	}
}

func vapObjects(i int, c vapCase) (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding, *corev1.ConfigMap) {
	name := fmt.Sprintf("case-%d", i)
	fail := admissionregistrationv1.Fail
	spec := *c.spec.DeepCopy()
	if spec.FailurePolicy == nil {
		spec.FailurePolicy = &fail
	}
	labels := map[string]string{"case": fmt.Sprint(i)}
	for k, v := range c.labels {
		labels[k] = v
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec},
		&admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: name + "-binding"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: name, ParamRef: c.ref, ValidationActions: c.actions}},
		&corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "object-" + fmt.Sprint(i), Namespace: "default", Labels: labels}, Data: c.object}
}

// warnings records the warnings kube adds to a request, and those a
// client reads from the answer's headers.
type warnings struct {
	mu   sync.Mutex
	list []string
}

func (w *warnings) HandleWarningHeader(_ int, _ string, text string) { w.add(text) }
func (w *warnings) AddWarning(_, text string)                        { w.add(text) }
func (w *warnings) add(text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.list = append(w.list, text)
}

func outcome(err error, w *warnings) vapOutcome {
	var out vapOutcome
	var se apierrors.APIStatus
	if errors.As(err, &se) {
		out.Code, out.Message = se.Status().Code, se.Status().Message
	} else if err != nil {
		out.Message = err.Error()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out.Warnings = w.list
	return out
}

// ourVAPOutcomes creates each case's policy, binding and object through
// the binary.
func ourVAPOutcomes(t *testing.T, cases []vapCase, params *corev1.ConfigMap) []vapOutcome {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	ctx := t.Context()
	admin, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().ConfigMaps("default").Create(ctx, params, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	out := make([]vapOutcome, len(cases))
	for i, c := range cases {
		policy, binding, obj := vapObjects(i, c)
		if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if _, err := admin.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		w := &warnings{}
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1, WarningHandler: w})
		if err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().ConfigMaps("default").Create(ctx, obj, metav1.CreateOptions{})
		out[i] = outcome(err, w)
	}
	return out
}

// kubeVAPOutcome dispatches the case's create through kube's plugin.
func kubeVAPOutcome(t *testing.T, i int, c vapCase, params *corev1.ConfigMap) vapOutcome {
	tc := startKubePolicies(t, validating.NewValidatingAdmissionPolicyAccessor, validating.NewValidatingAdmissionPolicyBindingAccessor, kubeCompilePolicy,
		func(a authorizer.UnconditionalAuthorizer, m *matching.Matcher, _ kubernetes.Interface) generic.Dispatcher[validating.PolicyHook] {
			return validating.NewDispatcher(a, generic.NewPolicyMatcher(m))
		})
	policy, binding, obj := vapObjects(i, c)
	if err := tc.UpdateAndWait(policy, binding); err != nil {
		t.Fatal(err)
	}
	// The policy's param informer exists once the policy is in; wait for
	// it to hold the param (without, a selector may find nothing yet).
	if c.spec.ParamKind != nil {
		if err := tc.UpdateAndWait(params.DeepCopy()); err != nil {
			t.Fatal(err)
		}
	}
	w := &warnings{}
	attr := admission.NewAttributesRecord(obj, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), "default", obj.Name,
		corev1.SchemeGroupVersion.WithResource("configmaps"), "", admission.Create, &metav1.CreateOptions{}, false, nil)
	ctx, stop := context.WithTimeout(warning.WithWarningRecorder(tc, w), 10*time.Second)
	defer stop()
	err := tc.Plugin.Dispatch(ctx, attr, admission.NewObjectInterfacesFromScheme(clientgoscheme.Scheme))
	return outcome(err, w)
}

// startKubePolicies starts one of kube's policy plugins in its test
// context, which holds namespace default.
func startKubePolicies[P, B runtime.Object, E generic.Evaluator](t *testing.T, newPolicy func(P) generic.PolicyAccessor,
	newBinding func(B) generic.BindingAccessor, compile func(P) E,
	dispatcher func(authorizer.UnconditionalAuthorizer, *matching.Matcher, kubernetes.Interface) generic.Dispatcher[generic.PolicyHook[P, B, E]],
) *generic.PolicyTestContext[P, B, E] {
	tc, cancel, err := generic.NewPolicyTestContext(t, newPolicy, newBinding, compile, dispatcher,
		nil, []meta.RESTMapping{{Resource: corev1.SchemeGroupVersion.WithResource("namespaces"),
			GroupVersionKind: corev1.SchemeGroupVersion.WithKind("Namespace"), Scope: meta.RESTScopeRoot}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cancel)
	if err := tc.Start(); err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default", Labels: map[string]string{"kubernetes.io/metadata.name": "default"}}}
	if err := tc.Update(ns); err != nil {
		t.Fatal(err)
	}
	return tc
}

// kubePolicyCompiler is the part kube's compilePolicy of either kind of
// policy shares: a compiler holding the policy's variables (each made by
// variable, of the policy's package), and its match conditions' matcher.
func kubePolicyCompiler(name string, variables []admissionregistrationv1.Variable, conditions []admissionregistrationv1.MatchCondition,
	failure *admissionregistrationv1.FailurePolicyType, opts cel.OptionalVariableDeclarations,
	variable func(admissionregistrationv1.Variable) cel.NamedExpressionAccessor) (*cel.CompositedCompiler, matchconditions.Matcher, error) {
	compiler, err := cel.NewCompositedCompiler(environment.MustBaseEnvSet(environment.DefaultCompatibilityVersion()))
	if err != nil {
		return nil, nil, err
	}
	var named []cel.NamedExpressionAccessor
	for _, v := range variables {
		named = append(named, variable(v))
	}
	compiler.CompileAndStoreVariables(named, opts, environment.StoredExpressions)
	var matcher matchconditions.Matcher
	if len(conditions) > 0 {
		var conds []cel.ExpressionAccessor
		for i := range conditions {
			conds = append(conds, (*matchconditions.MatchCondition)(&conditions[i]))
		}
		matcher = matchconditions.NewMatcher(compiler.CompileCondition(conds, opts, environment.StoredExpressions), failure, "policy", "validate", name)
	}
	return compiler, matcher, nil
}

// kubeCompilePolicy is kube's compilePolicy (validating/plugin.go, not
// exported), from the exported parts it is made of.
func kubeCompilePolicy(p *validating.Policy) validating.Validator {
	hasParams := p.Spec.ParamKind != nil
	vars := cel.OptionalVariableDeclarations{HasParams: hasParams, HasAuthorizer: true}
	msgVars := cel.OptionalVariableDeclarations{HasParams: hasParams}
	compiler, matcher, err := kubePolicyCompiler(p.Name, p.Spec.Variables, p.Spec.MatchConditions, p.Spec.FailurePolicy, vars,
		func(v admissionregistrationv1.Variable) cel.NamedExpressionAccessor {
			return &validating.Variable{Name: v.Name, Expression: v.Expression}
		})
	if err != nil {
		return validating.NewValidator(nil, nil, nil, nil, p.Spec.FailurePolicy, err)
	}
	validations := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	messages := make([]cel.ExpressionAccessor, len(p.Spec.Validations))
	for i, v := range p.Spec.Validations {
		validations[i] = &validating.ValidationCondition{Expression: v.Expression, Message: v.Message, Reason: v.Reason}
		if v.MessageExpression != "" {
			messages[i] = &validating.MessageExpressionCondition{MessageExpression: v.MessageExpression}
		}
	}
	annotations := make([]cel.ExpressionAccessor, len(p.Spec.AuditAnnotations))
	for i, a := range p.Spec.AuditAnnotations {
		annotations[i] = &validating.AuditAnnotationCondition{Key: a.Key, ValueExpression: a.ValueExpression}
	}
	return validating.NewValidator(
		compiler.CompileCondition(validations, vars, environment.StoredExpressions),
		matcher,
		compiler.CompileCondition(annotations, vars, environment.StoredExpressions),
		compiler.CompileCondition(messages, msgVars, environment.StoredExpressions),
		p.Spec.FailurePolicy, nil)
}
