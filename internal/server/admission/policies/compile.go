package policies

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/cellib"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/crd"
)

// kube's CEL cost limits (k8s.io/apiserver/pkg/apis/cel/config.go): one
// expression's, and what a policy's expressions may spend together on
// one binding and one param.
const (
	perCallLimit         = 1_000_000
	runtimeCostBudget    = 10_000_000
	maxMessageBytes      = 5 * 1024 // MaxEvaluatedMessageExpressionSizeBytes
	maxAnnotationBytes   = 10 * 1024
	maxValidationFailure = 50
)

// envs are the CRD rules' environment with the variables of admission
// policies, by [patchTypes][hasParams][authorizer]: a policy without
// paramKind cannot name params, only the mutations of mutating policies
// have kube's patch types (Object, JSONPatch) and jsonpatch.escapeKey, and
// every expression but a messageExpression has the authorizer variables.
// Objects are dynamic: type errors show at evaluation.
var envs = func() [2][2][2]*cel.Env {
	var out [2][2][2]*cel.Env
	for m := range out {
		for i := range out[m] {
			for a := range out[m][i] {
				opts := []cel.EnvOption{
					cel.Variable("object", cel.DynType),
					cel.Variable("oldObject", cel.DynType),
					cel.Variable("request", cel.DynType),
					cel.Variable("namespaceObject", cel.DynType),
					cel.Variable("variables", cel.MapType(cel.StringType, cel.DynType)),
				}
				if i == 1 {
					opts = append(opts, cel.Variable("params", cel.DynType))
				}
				if m == 1 {
					opts = append(opts, patchTypes(), cellib.JSONPatch())
				}
				if a == 1 {
					opts = append(opts, webhook.AuthorizerVariables()...)
				}
				env, err := crd.BaseCELEnv().Extend(opts...)
				if err != nil {
					panic(err)
				}
				out[m][i][a] = env
			}
		}
	}
	return out
}()

// exprEnv says which environment an expression compiles in.
type exprEnv struct{ patchTypes, hasParams, message bool }

func (e exprEnv) env() *cel.Env {
	return envs[b2i(e.patchTypes)][b2i(e.hasParams)][b2i(!e.message)]
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Policy is a ValidatingAdmissionPolicy or a MutatingAdmissionPolicy
// compiled, with the bindings that name it.
type Policy struct {
	Name      string
	ignore    bool // failurePolicy Ignore
	hasParams bool
	paramKind struct{ APIVersion, Kind string }
	match     *matchResources
	// configErr, when set, is the policy's configuration error (an
	// expression that does not compile): a matching write fails by the
	// failure policy.
	configErr     error
	conditions    []expression
	variables     []expression
	variableIndex map[string]int // of variables, by name
	validations   []validation
	annotations   []expression // name is the key, program the value's
	mutations     []mutation
	reinvoke      bool // reinvocationPolicy IfNeeded
	Bindings      []*Binding
}

// mutation is one of a mutating policy's: an apply configuration or a
// JSON patch.
type mutation struct {
	expression
	jsonPatch bool
}

type expression struct {
	name, text string
	program    cel.Program
}

type validation struct {
	expression
	message string
	reason  string
	msgExpr *expression
}

// Binding is a ValidatingAdmissionPolicyBinding or a
// MutatingAdmissionPolicyBinding.
type Binding struct {
	Name, PolicyName string
	paramRef         *paramRef
	match            *matchResources // nil matches everything the policy does
	deny, warn       bool
	audit            bool
	actions          []string
	configErr        error
}

type paramRef struct {
	Name, Namespace string
	Selector        *selector.Labels
	DenyNotFound    bool
}

type matchResources struct {
	namespaceSelector, objectSelector selector.Labels
	equivalent                        bool
	rules, exclude                    []namedRule
}

type namedRule struct {
	webhook.Rule
	names []string
}

// spec is the JSON of the parts of both kinds this package reads.
type spec struct {
	FailurePolicy string `json:"failurePolicy"`
	ParamKind     *struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	} `json:"paramKind"`
	MatchConstraints *matchJSON `json:"matchConstraints"`
	MatchConditions  []struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	} `json:"matchConditions"`
	Variables []struct {
		Name       string `json:"name"`
		Expression string `json:"expression"`
	} `json:"variables"`
	Validations []struct {
		Expression        string `json:"expression"`
		Message           string `json:"message"`
		MessageExpression string `json:"messageExpression"`
		Reason            string `json:"reason"`
	} `json:"validations"`
	AuditAnnotations []struct {
		Key             string `json:"key"`
		ValueExpression string `json:"valueExpression"`
	} `json:"auditAnnotations"`
	Mutations []struct {
		PatchType          string          `json:"patchType"`
		ApplyConfiguration *expressionJSON `json:"applyConfiguration"`
		JSONPatch          *expressionJSON `json:"jsonPatch"`
	} `json:"mutations"`
	ReinvocationPolicy string `json:"reinvocationPolicy"`

	PolicyName string `json:"policyName"`
	ParamRef   *struct {
		Name                    string                  `json:"name"`
		Namespace               string                  `json:"namespace"`
		Selector                *selector.LabelSelector `json:"selector"`
		ParameterNotFoundAction string                  `json:"parameterNotFoundAction"`
	} `json:"paramRef"`
	MatchResources    *matchJSON `json:"matchResources"`
	ValidationActions []string   `json:"validationActions"`
}

type expressionJSON struct {
	Expression string `json:"expression"`
}

// expression is the mutation's expression.
func (m *expressionJSON) expression() string {
	if m == nil {
		return ""
	}
	return m.Expression
}

type matchJSON struct {
	NamespaceSelector    *selector.LabelSelector `json:"namespaceSelector"`
	ObjectSelector       *selector.LabelSelector `json:"objectSelector"`
	MatchPolicy          string                  `json:"matchPolicy"`
	ResourceRules        []ruleJSON              `json:"resourceRules"`
	ExcludeResourceRules []ruleJSON              `json:"excludeResourceRules"`
}

type ruleJSON struct {
	Operations    []string `json:"operations"`
	APIGroups     []string `json:"apiGroups"`
	APIVersions   []string `json:"apiVersions"`
	Resources     []string `json:"resources"`
	Scope         string   `json:"scope"`
	ResourceNames []string `json:"resourceNames"`
}

func readSpec(obj api.Object) (spec, error) {
	var s struct {
		Spec spec `json:"spec"`
	}
	b, err := json.Marshal(obj)
	if err == nil {
		err = json.Unmarshal(b, &s)
	}
	return s.Spec, err
}

// Compile reads and compiles a stored ValidatingAdmissionPolicy or
// MutatingAdmissionPolicy. What does not compile becomes the policy's
// configuration error, as kube.
func Compile(obj api.Object) *Policy {
	p := &Policy{Name: obj.Name()}
	s, err := readSpec(obj)
	if err != nil {
		p.configErr = err
		return p
	}
	p.ignore = s.FailurePolicy == "Ignore"
	p.reinvoke = s.ReinvocationPolicy == "IfNeeded"
	if s.ParamKind != nil {
		p.hasParams = true
		p.paramKind.APIVersion, p.paramKind.Kind = s.ParamKind.APIVersion, s.ParamKind.Kind
	}
	if p.match, err = readMatch(s.MatchConstraints); err != nil {
		p.configErr = err
		return p
	}
	var errs []string
	compile := func(name, text string) expression {
		prg, detail := compileExpr(text, exprEnv{hasParams: p.hasParams})
		if detail != "" {
			errs = append(errs, detail)
		}
		return expression{name: name, text: text, program: prg}
	}
	for _, c := range s.MatchConditions {
		p.conditions = append(p.conditions, compile(c.Name, c.Expression))
	}
	p.variableIndex = make(map[string]int, len(s.Variables))
	for i, v := range s.Variables {
		p.variables = append(p.variables, compile(v.Name, v.Expression))
		p.variableIndex[v.Name] = i
	}
	for _, v := range s.Validations {
		val := validation{expression: compile("", v.Expression), message: v.Message, reason: v.Reason}
		if strings.TrimSpace(v.MessageExpression) != "" {
			prg, detail := compileExpr(v.MessageExpression, exprEnv{hasParams: p.hasParams, message: true})
			if detail != "" {
				errs = append(errs, detail)
			}
			val.msgExpr = &expression{text: v.MessageExpression, program: prg}
		}
		p.validations = append(p.validations, val)
	}
	for _, a := range s.AuditAnnotations {
		p.annotations = append(p.annotations, compile(a.Key, a.ValueExpression))
	}
	for _, m := range s.Mutations {
		jsonPatch := m.PatchType == "JSONPatch"
		text := m.ApplyConfiguration.expression()
		if jsonPatch {
			text = m.JSONPatch.expression()
		}
		prg, detail := compileExpr(text, exprEnv{patchTypes: true, hasParams: p.hasParams})
		if detail != "" {
			errs = append(errs, detail)
		}
		p.mutations = append(p.mutations, mutation{expression: expression{text: text, program: prg}, jsonPatch: jsonPatch})
	}
	if len(errs) > 0 {
		p.configErr = fmt.Errorf("%s", strings.Join(errs, "; "))
	}
	return p
}

// ReadBinding reads a stored ValidatingAdmissionPolicyBinding or
// MutatingAdmissionPolicyBinding.
func ReadBinding(obj api.Object) *Binding {
	b := &Binding{Name: obj.Name()}
	s, err := readSpec(obj)
	if err != nil {
		b.configErr = err
		return b
	}
	b.PolicyName, b.actions = s.PolicyName, s.ValidationActions
	for _, a := range s.ValidationActions {
		switch a {
		case "Deny":
			b.deny = true
		case "Warn":
			b.warn = true
		case "Audit":
			b.audit = true
		}
	}
	if r := s.ParamRef; r != nil {
		b.paramRef = &paramRef{Name: r.Name, Namespace: r.Namespace, DenyNotFound: r.ParameterNotFoundAction == "Deny"}
		if r.Selector != nil {
			sel, err := selector.FromLabelSelector(r.Selector)
			if err != nil {
				b.configErr = err
			}
			b.paramRef.Selector = &sel
		}
	}
	if s.MatchResources != nil {
		m, err := readMatch(s.MatchResources)
		if err != nil {
			b.configErr = err
		}
		b.match = m
	}
	return b
}

func readMatch(m *matchJSON) (*matchResources, error) {
	if m == nil {
		return &matchResources{}, nil
	}
	out := &matchResources{equivalent: m.MatchPolicy != "Exact"}
	var err error
	if out.namespaceSelector, err = labelSelector(m.NamespaceSelector); err != nil {
		return nil, err
	}
	if out.objectSelector, err = labelSelector(m.ObjectSelector); err != nil {
		return nil, err
	}
	rules := func(rs []ruleJSON) []namedRule {
		out := make([]namedRule, len(rs))
		for i, r := range rs {
			out[i] = namedRule{webhook.Rule{Operations: r.Operations, APIGroups: r.APIGroups, APIVersions: r.APIVersions,
				Resources: r.Resources, Scope: cmpOr(r.Scope, "*")}, r.ResourceNames}
		}
		return out
	}
	out.rules, out.exclude = rules(m.ResourceRules), rules(m.ExcludeResourceRules)
	return out, nil
}

func cmpOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func labelSelector(ls *selector.LabelSelector) (selector.Labels, error) {
	if ls == nil {
		ls = &selector.LabelSelector{}
	}
	return selector.FromLabelSelector(ls)
}

// compileExpr compiles one expression, or says why it does not, in kube's
// words.
func compileExpr(text string, in exprEnv) (cel.Program, string) {
	env := in.env()
	ast, iss := env.Compile(text)
	if iss.Err() != nil {
		return nil, "compilation failed: " + iss.String()
	}
	prg, err := env.Program(ast, webhook.ProgramOptions(perCallLimit)...)
	if err != nil {
		return nil, "unexpected compilation error: " + err.Error()
	}
	return prg, ""
}

// outputCheck says why an expression's type is not want (nil: any). A
// mutation's type must be exactly want, as kube's compiler checks it; the
// others' may be dynamic.
func outputCheck(text string, in exprEnv, want *cel.Type) string {
	if want == nil {
		return ""
	}
	mutation := isMutationType(want)
	ast, iss := in.env().Compile(text)
	if iss.Err() != nil {
		return ""
	}
	out := ast.OutputType()
	if out.IsExactType(want) || !mutation && (want.IsAssignableType(out) || out.IsAssignableType(types.DynType)) {
		return ""
	}
	return fmt.Sprintf("must evaluate to %v but got %v", want, ast.OutputType())
}

// isMutationType says whether t is the type of a mutation's expression,
// which alone may use the patch types.
func isMutationType(t *cel.Type) bool {
	return t != nil && (t == objectType || t.IsExactType(cel.ListType(jsonPatchType)))
}

// Causes compiles the expressions of a ValidatingAdmissionPolicy or a
// MutatingAdmissionPolicy as kube's validation does: a FieldValueInvalid
// cause for each that does not compile (required and empty ones are the
// resource's own validation's).
func Causes(obj api.Object) []api.StatusCause {
	s, err := readSpec(obj)
	if err != nil {
		return nil // the resource's validation names the mistyped field
	}
	hasParams := s.ParamKind != nil
	var causes []api.StatusCause
	// kube's messageExpressions alone have no authorizer variables.
	check := func(field, text string, want *cel.Type, message bool) {
		if strings.TrimSpace(text) == "" {
			return
		}
		in := exprEnv{patchTypes: isMutationType(want), hasParams: hasParams, message: message}
		_, detail := compileExpr(text, in)
		if detail == "" {
			detail = outputCheck(text, in, want)
		}
		if detail != "" {
			causes = append(causes, api.StatusCause{Type: api.CauseTypeFieldValueInvalid, Field: field,
				Message: "Invalid value: " + strconv.Quote(text) + ": " + detail})
		}
	}
	for i, c := range s.MatchConditions {
		check(fmt.Sprintf("spec.matchConditions[%d].expression", i), c.Expression, cel.BoolType, false)
	}
	for i, v := range s.Variables {
		check(fmt.Sprintf("spec.variables[%d].expression", i), v.Expression, nil, false)
	}
	for i, v := range s.Validations {
		check(fmt.Sprintf("spec.validations[%d].expression", i), v.Expression, cel.BoolType, false)
		check(fmt.Sprintf("spec.validations[%d].messageExpression", i), v.MessageExpression, cel.StringType, true)
	}
	for i, a := range s.AuditAnnotations {
		check(fmt.Sprintf("spec.auditAnnotations[%d].valueExpression", i), a.ValueExpression, nil, false)
	}
	for i, m := range s.Mutations {
		switch m.PatchType {
		case "ApplyConfiguration":
			check(fmt.Sprintf("spec.mutations[%d].applyConfiguration.expression", i), m.ApplyConfiguration.expression(), objectType, false)
		case "JSONPatch":
			check(fmt.Sprintf("spec.mutations[%d].jsonPatch.expression", i), m.JSONPatch.expression(), cel.ListType(jsonPatchType), false)
		}
	}
	return causes
}
