package crd

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/google/cel-go/cel"
	celchecker "github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/cellib"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// Kube's CEL limits (k8s.io/apiserver/pkg/apis/cel/config.go and the
// apiextensions validation of definitions).
const (
	celPerCallLimit       = 1_000_000   // runtime cost of one rule
	celRuntimeBudget      = 10_000_000  // runtime cost of every rule of one request
	celStaticRuleLimit    = 10_000_000  // estimated cost of one rule times its cardinality
	celStaticCRDLimit     = 100_000_000 // estimated cost of every rule of a schema
	celMaxRequestBytes    = 3 * 1024 * 1024
	celMaxMessageExprSize = 5 * 1024
)

// celEvalTimeout bounds the rules of one request in time, as kube's
// default request timeout (--request-timeout, 1m) does through the
// request's context: cel-go's cost tracking makes a comprehension's time
// grow with the square of its steps (50k steps, a fifth of the cost limit
// of one call, took 8 s in kube 1.37's validator and 15 s here on a loaded
// machine), which the cost budget alone does not bound.
const celEvalTimeout = time.Minute

// ValidationRule is one x-kubernetes-validations entry.
type ValidationRule struct {
	Rule              string `json:"rule"`
	Message           string `json:"message"`
	MessageExpression string `json:"messageExpression"`
	Reason            string `json:"reason"`
	FieldPath         string `json:"fieldPath"`
	OptionalOldSelf   *bool  `json:"optionalOldSelf"`
}

// shown is the rule as kube's messages print it: its internal type's
// fields, unset pointers null.
func (v ValidationRule) shown() string {
	var reason *string
	if v.Reason != "" {
		reason = &v.Reason
	}
	b, _ := json.Marshal(struct {
		Rule, Message, MessageExpression string
		Reason                           *string
		FieldPath                        string
		OptionalOldSelf                  *bool
	}{v.Rule, v.Message, v.MessageExpression, reason, v.FieldPath, v.OptionalOldSelf})
	return string(b)
}

// celRule is a rule compiled for its schema node, once per served version.
type celRule struct {
	ValidationRule
	prog        cel.Program
	msgProg     cel.Program // messageExpression's, or nil
	usesOldSelf bool
	compileErr  string // why the rule did not compile, in kube's words
}

// celBase is the environment every rule compiles in: kube's base
// environment for new expressions (k8s.io/apiserver/pkg/cel/environment/
// base.go at compatibility version 1.36, what kube 1.37 compiles a
// definition's rules with): its libraries, cel-go's extensions at kube's
// versions, and its checks of literals after type-checking.
var celBase = func() *cel.Env {
	env, err := cel.NewEnv(append(cellib.EnvOptions(),
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.TwoVarComprehensions(),
		ext.Lists(ext.ListsVersion(3)),
		cel.CostEstimatorOptions(celchecker.PresenceTestHasCost(false)),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
			cel.ValidateHomogeneousAggregateLiterals(),
		),
	)...)
	if err != nil {
		panic(err)
	}
	return env
}()

// celProgramOptions are kube's: constants folded (and constant regexes
// compiled) when the program is made, a cost limit per call, checked every
// 100 comprehension steps, presence tests free.
var celProgramOptions = []cel.ProgramOption{
	cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
	cel.CostLimit(celPerCallLimit),
	cel.InterruptCheckFrequency(100),
	cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
	cel.CostTracking(cellib.Costs{}),
}

// celType is what rules and cost estimates know of a schema node: its CEL
// type, the most elements (items, properties, bytes) a value may have and the
// fewest bytes it takes in JSON, as kube's SchemaDeclType computes them.
type celType struct {
	typ         *cel.Type
	maxElements uint64
	minSize     int64
}

func declType(s *Schema) celType {
	unboundedString := uint64(celMaxRequestBytes - 2)
	switch {
	case s.IntOrString:
		t := celType{typ: cel.DynType, maxElements: unboundedString, minSize: 1}
		if s.MaxLength != nil {
			t.maxElements = uint64(max(*s.MaxLength, 0)) * 4
		}
		return t
	case s.Type == "array":
		items := celType{typ: cel.DynType, minSize: 1}
		if s.Items != nil {
			items = declType(s.Items)
		}
		n := uint64((celMaxRequestBytes - 2) / (items.minSize + 1))
		if s.MaxItems != nil {
			n = uint64(max(*s.MaxItems, 0))
		}
		return celType{typ: cel.ListType(items.typ), maxElements: n, minSize: 2}
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil && len(s.Properties) == 0:
		vals := declType(s.AdditionalProperties.Schema)
		n := uint64((celMaxRequestBytes - 2) / (vals.minSize + 6))
		if s.MaxProperties != nil {
			n = uint64(max(*s.MaxProperties, 0))
		}
		return celType{typ: cel.MapType(cel.StringType, vals.typ), maxElements: n, minSize: 2}
	case s.Type == "object":
		min := int64(2)
		for _, name := range s.Required {
			if p := s.Properties[name]; p != nil && len(p.Default) == 0 && declared(p) {
				min += int64(len(name)) + declType(p).minSize + 4
			}
		}
		return celType{typ: cel.MapType(cel.StringType, cel.DynType), minSize: min}
	case s.Type == "string" && s.Format == "byte":
		t := celType{typ: cel.BytesType, maxElements: unboundedString, minSize: 2}
		if s.MaxLength != nil {
			t.maxElements = uint64(max(*s.MaxLength, 0))
		}
		return t
	case s.Type == "string" && s.Format == "duration":
		return celType{typ: cel.DurationType, maxElements: 32, minSize: 3}
	case s.Type == "string" && s.Format == "date":
		return celType{typ: cel.TimestampType, maxElements: 12, minSize: 12}
	case s.Type == "string" && s.Format == "date-time":
		return celType{typ: cel.TimestampType, maxElements: 32, minSize: 21}
	case s.Type == "string":
		t := celType{typ: cel.StringType, maxElements: unboundedString, minSize: 2}
		switch {
		case s.MaxLength != nil:
			t.maxElements = uint64(max(*s.MaxLength, 0)) * 4
		case len(s.Enum) > 0:
			t.maxElements = 0
			for _, e := range s.Enum {
				if str, ok := e.(string); ok {
					t.maxElements = max(t.maxElements, uint64(len(str)))
				}
			}
		}
		return t
	case s.Type == "integer":
		return celType{typ: cel.IntType, minSize: 1}
	case s.Type == "number":
		return celType{typ: cel.DoubleType, minSize: 1}
	case s.Type == "boolean":
		return celType{typ: cel.BoolType, minSize: 4}
	}
	return celType{typ: cel.DynType, minSize: 1}
}

// sizes gives the cost estimator the schema's bounds for the values a rule
// reaches, by the path cel-go reports ("self", "spec", "@items"), as kube's.
type sizes struct{ root *Schema }

func (z sizes) EstimateSize(n celchecker.AstNode) *celchecker.SizeEstimate {
	p := n.Path()
	if len(p) == 0 {
		return nil
	}
	s := z.root
	for _, name := range p[1:] {
		switch {
		// A list typed dyn (map(string, dyn) holds every object's fields)
		// is ranged over as "@keys" or "@values".
		case strings.HasPrefix(name, "@") && s.Items != nil:
			s = s.Items
		case name == "@values" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
			s = s.AdditionalProperties.Schema
		case name == "@keys":
			// kube's map keys are its plain string type, bound 0.
			return &celchecker.SizeEstimate{}
		case s.Properties[unescape(name)] != nil:
			s = s.Properties[unescape(name)]
		default:
			return nil
		}
	}
	return &celchecker.SizeEstimate{Max: declType(s).maxElements}
}

func (z sizes) EstimateCallCost(function, overload string, target *celchecker.AstNode, args []celchecker.AstNode) *celchecker.CallEstimate {
	return cellib.EstimateCallCost(z, function, overload, target, args)
}

// compileRules compiles the rules of s and of every node below it, keeping
// the programs on the nodes, and returns kube's causes for rules that do not
// compile or cost too much, path being s's place in the definition.
func (s *Schema) compileRules(path string) []api.StatusCause {
	var total totalCost
	s.root = true
	causes := s.compileNode(path, 1, "", &total)
	if total.sum > celStaticCRDLimit {
		for _, r := range total.top {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueForbidden, r.path, "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
		}
		causes = append(causes, apierror.Field(api.CauseTypeFieldValueForbidden, path, "Forbidden: "+costMessage("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", total.sum, celStaticCRDLimit)))
	}
	return causes
}

// totalCost is kube's TotalCost: the estimated cost of every rule of a
// schema, and the 4 costliest of those over 1% of the limit, which its
// message names.
type totalCost struct {
	sum uint64
	top []ruleCost
}

type ruleCost struct {
	path string
	cost uint64
}

func (t *totalCost) observe(path string, cost uint64) {
	t.sum = saturatingAdd(t.sum, cost)
	if cost < celStaticCRDLimit/100 {
		return
	}
	t.top = append(t.top, ruleCost{path, cost})
	slices.SortStableFunc(t.top, func(a, b ruleCost) int { return cmp.Compare(b.cost, a.cost) })
	t.top = t.top[:min(len(t.top), 4)]
}

// compileNode compiles s's rules; cardinality is how many times s may
// occur in one object (0: unbounded), which multiplies its rules' cost;
// uncorrelatable is the path of the highest list above s whose items kube
// cannot pair with old ones (oldSelf is refused below it).
func (s *Schema) compileNode(path string, cardinality uint64, uncorrelatable string, total *totalCost) []api.StatusCause {
	var causes []api.StatusCause
	if len(s.Validations) > 0 {
		dt := declType(s)
		card := cardinality
		if card == 0 {
			card = uint64(celMaxRequestBytes / (dt.minSize + 1))
		}
		declared := s
		if s.root {
			declared = withTypeMeta(s)
		}
		p := &objectTypes{Provider: celBase.CELTypeProvider(), objects: map[string]*Schema{}}
		// kube names the type "selfType<n>": a name no rule can spell as
		// an identifier (type names resolve as identifiers).
		t := p.typeOf(declared, "selfType")
		// As kube, a rule with optionalOldSelf sees oldSelf as an optional.
		env, err := celBase.Extend(cel.Variable("self", t), cel.Variable("oldSelf", t), cel.CustomTypeProvider(p))
		var optEnv *cel.Env
		if err == nil {
			optEnv, err = celBase.Extend(cel.Variable("self", t), cel.Variable("oldSelf", cel.OptionalType(t)), cel.CustomTypeProvider(p))
		}
		if err != nil {
			return append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, path+".x-kubernetes-validations", "Internal error: "+err.Error()))
		}
		s.rules = make([]*celRule, len(s.Validations))
		for i, v := range s.Validations {
			at := fmt.Sprintf("%s.x-kubernetes-validations[%d]", path, i)
			ruleEnv := env
			if v.OptionalOldSelf != nil && *v.OptionalOldSelf {
				ruleEnv = optEnv
			}
			r, cost, msgCost, cs := compileRule(ruleEnv, s, v, at)
			s.rules[i] = r
			s.readsOldSelf = s.readsOldSelf || r.usesOldSelf
			c := saturatingMul(cost, card)
			if c > celStaticRuleLimit {
				causes = append(causes, apierror.Field(api.CauseTypeFieldValueForbidden, at+".rule", "Forbidden: "+costMessage("estimated rule cost", c, celStaticRuleLimit)))
			}
			total.observe(at+".rule", c)
			causes = append(causes, cs...)
			if r.msgProg != nil {
				// As kube, a messageExpression's cost is not multiplied.
				if msgCost > celStaticRuleLimit {
					causes = append(causes, apierror.Field(api.CauseTypeFieldValueForbidden, at+".messageExpression", "Forbidden: "+costMessage("estimated messageExpression cost", msgCost, celStaticRuleLimit)))
				}
				total.observe(at+".messageExpression", msgCost)
			}
			switch {
			case r.usesOldSelf && uncorrelatable != "":
				causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, at+".rule", fmt.Sprintf("Invalid value: %q: oldSelf cannot be used on the uncorrelatable portion of the schema within %s", v.Rule, uncorrelatable)))
			case !r.usesOldSelf && v.OptionalOldSelf != nil:
				causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, at+".optionalOldSelf", fmt.Sprintf("Invalid value: %t: may not be set if oldSelf is not used in rule", *v.OptionalOldSelf)))
			}
		}
	}
	below := func(child *Schema, bound *int64, p, unc string) {
		c := uint64(0)
		if bound != nil && cardinality != 0 {
			c = saturatingMul(cardinality, uint64(max(*bound, 0)))
		}
		causes = append(causes, child.compileNode(p, c, unc, total)...)
	}
	for _, name := range sortedKeys(s.Properties) {
		if p := s.Properties[name]; p != nil {
			causes = append(causes, p.compileNode(path+".properties["+name+"]", cardinality, uncorrelatable, total)...)
		}
	}
	if s.Items != nil {
		// Items correlate with old ones only in a list-type map, as kube's
		// validation of definitions says; fields and map values by name.
		unc := uncorrelatable
		if unc == "" && s.ListType != "map" {
			unc = path
		}
		below(s.Items, s.MaxItems, path+".items", unc)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		below(s.AdditionalProperties.Schema, s.MaxProperties, path+".additionalProperties", uncorrelatable)
	}
	for _, c := range s.children() {
		s.hasRules = s.hasRules || c.hasRules
	}
	s.hasRules = s.hasRules || len(s.rules) > 0
	return causes
}

// compileRule compiles one rule and its messageExpression, returning their
// estimated costs.
func compileRule(env *cel.Env, s *Schema, v ValidationRule, at string) (r *celRule, cost, msgCost uint64, causes []api.StatusCause) {
	r = &celRule{ValidationRule: v}
	invalid := func(field, detail string) []api.StatusCause {
		if field == "rule" {
			r.compileErr = detail
		}
		return []api.StatusCause{apierror.Field(api.CauseTypeFieldValueInvalid, at+"."+field, fmt.Sprintf("Invalid value: %s: %s", v.shown(), detail))}
	}
	if strings.TrimSpace(v.Rule) == "" {
		return r, 0, 0, []api.StatusCause{apierror.Field(api.CauseTypeFieldValueRequired, at+".rule", "Required value: rule is not specified")}
	}
	ast, iss := env.Compile(v.Rule)
	if iss.Err() != nil {
		return r, 0, 0, invalid("rule", "compilation failed: "+iss.String())
	}
	if ast.OutputType() != cel.BoolType { // dyn too: kube compares the pointers
		return r, 0, 0, invalid("rule", "cel expression must evaluate to a bool")
	}
	r.usesOldSelf = references(ast, "oldSelf")
	prog, err := env.Program(ast, celProgramOptions...)
	if err != nil {
		return r, 0, 0, invalid("rule", "program instantiation failed: "+err.Error())
	}
	r.prog = prog
	est, err := env.EstimateCost(ast, sizes{root: s})
	if err != nil {
		return r, 0, 0, invalid("rule", "cost estimation failed: "+err.Error())
	}
	cost = est.Max
	if v.MessageExpression != "" {
		mast, iss := env.Compile(v.MessageExpression)
		switch {
		case iss.Err() != nil:
			return r, cost, 0, invalid("messageExpression", "messageExpression compilation failed: "+iss.String())
		case mast.OutputType() != cel.StringType:
			return r, cost, 0, invalid("messageExpression", "messageExpression must evaluate to a string")
		}
		prog, err := env.Program(mast, celProgramOptions...)
		if err != nil {
			return r, cost, 0, invalid("messageExpression", "messageExpression instantiation failed: "+err.Error())
		}
		mest, err := env.EstimateCost(mast, sizes{root: s})
		if err != nil {
			return r, cost, 0, invalid("messageExpression", "cost estimation failed for messageExpression: "+err.Error())
		}
		r.msgProg, msgCost = prog, mest.Max
	}
	return r, cost, msgCost, nil
}

// references reports whether a checked expression names variable name.
func references(ast *cel.Ast, name string) bool {
	for _, ref := range ast.NativeRep().ReferenceMap() {
		if ref.Name == name {
			return true
		}
	}
	return false
}

// costMessage is kube's getCostErrorMessage.
func costMessage(what string, cost, limit uint64) string {
	f := float64(cost) / float64(limit)
	factor := fmt.Sprintf("%.1fx", f)
	switch {
	case f > 100:
		factor = "more than 100x"
	case f < 1.5:
		factor = fmt.Sprintf("%fx", f)
	}
	return fmt.Sprintf("%s exceeds budget by factor of %s (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)", what, factor)
}

func saturatingMul(a, b uint64) uint64 {
	if a != 0 && b > math.MaxUint64/a {
		return math.MaxUint64
	}
	return a * b
}

func saturatingAdd(a, b uint64) uint64 {
	if a > math.MaxUint64-b {
		return math.MaxUint64
	}
	return a + b
}

// celEval runs the rules of a schema over one object, once per request.
type celEval struct {
	ctx    context.Context
	budget int64
	causes []api.StatusCause
	out    bool // the budget ran out: no further rules run
}

// ValidateRules evaluates s's rules over obj as kube's CEL validator does,
// every rule at most once, within kube's runtime budget per request. On
// update (old not nil) a rule that reads oldSelf runs where a value of old
// correlates (fields by name, list-type map items by their keys), and one
// that does not is let pass, as kube's ratcheting does, when the value it
// failed on, or its nearest correlated ancestor, is unchanged. A rule with
// optionalOldSelf runs everywhere, oldSelf an optional.
func (s *Schema) ValidateRules(ctx context.Context, obj, old map[string]any) []api.StatusCause {
	if !s.hasRules {
		return nil
	}
	return s.evalRules(ctx, obj, old).causes
}

func (s *Schema) evalRules(ctx context.Context, obj, old map[string]any) *celEval {
	e := &celEval{ctx: ctx, budget: celRuntimeBudget}
	var o any
	var r ratchet
	if old != nil {
		o = old
		r.cur = &correlated{s: s, v: obj, old: o}
	}
	e.node(s, obj, o, "", r)
	return e
}

// node evaluates the rules at s, then below it; old is the correlated old
// value, nil if none.
func (e *celEval) node(s *Schema, v, old any, path string, r ratchet) {
	if e.out || v == nil || !s.hasRules {
		return
	}
	e.rules(s, v, old, path, r)
	switch v := v.(type) {
	case map[string]any:
		om, _ := old.(map[string]any)
		for _, name := range sortedKeys(v) {
			child, at := s.Properties[name], join(path, name)
			if child == nil && s.AdditionalProperties != nil {
				// kube's path of a map value is its key: "labels[k]".
				child, at = s.AdditionalProperties.Schema, path+"["+name+"]"
			}
			if child != nil {
				e.node(child, v[name], om[name], at, r.key(name))
			}
		}
	case []any:
		if s.Items != nil {
			prev := s.oldItems(&old)
			for i, item := range v {
				var o any
				if p := prev(item); p != nil {
					o = *p
				}
				e.node(s.Items, item, o, fmt.Sprintf("%s[%d]", path, i), r.index(i))
			}
		}
	}
}

func (e *celEval) rules(s *Schema, v, old any, path string, rt ratchet) {
	if len(s.rules) == 0 {
		return
	}
	if e.budget <= 0 {
		e.fail(path, s, "validation failed due to running out of cost budget, no further validation rules will be run")
		return
	}
	self := celValue(s, v)
	vars := map[string]any{"self": self}
	var optional map[string]any
	// As kube's activations: oldSelf is bound only at a node whose rules
	// read it, and the optional one is none where no value correlates.
	if s.readsOldSelf {
		optional = map[string]any{"self": self, "oldSelf": types.OptionalNone}
		if old != nil {
			o := celValue(s, old)
			vars["oldSelf"] = o
			optional["oldSelf"] = types.OptionalOf(celBase.CELTypeAdapter().NativeToValue(o))
		}
	}
	for _, r := range s.rules {
		if r != nil && r.compileErr != "" {
			// Only a definition's defaults meet such a rule: a definition
			// whose rules do not compile is refused.
			e.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %q: rule compile error: %s", s.Type, r.compileErr))
			continue
		}
		if r == nil || r.prog == nil || r.usesOldSelf && old == nil && !r.optionalOldSelf() {
			continue
		}
		act := vars
		if r.optionalOldSelf() {
			act = optional
		}
		out, det, err := r.prog.ContextEval(e.ctx, act)
		if det != nil && det.ActualCost() != nil {
			cost := *det.ActualCost()
			if cost > uint64(e.budget) {
				e.fail(path, s, "validation failed due to running out of cost budget, no further validation rules will be run")
				return
			}
			e.budget -= int64(cost)
		}
		if err != nil {
			if strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded") {
				e.fail(path, s, fmt.Sprintf("'%v': no further validation rules will be run due to call cost exceeds limit for rule: %s", err, r.errorString()))
				return
			}
			format := "Invalid value: %q: %v evaluating rule: %s"
			if strings.HasPrefix(err.Error(), "no such overload") {
				// A type the checker could not see (dyn, or a library's quirk).
				format = "Invalid value: %q: '%v': call arguments did not match a supported operator, function or macro signature for rule: %s"
			}
			e.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf(format, s.Type, err, r.errorString()))
			continue
		}
		if out == types.True {
			continue
		}
		at := path
		if r.FieldPath != "" {
			at = path + r.FieldPath
			if path == "" {
				at = strings.TrimPrefix(r.FieldPath, ".")
			}
		}
		// kube turns the failure into a warning where it ratchets.
		ratcheted := !r.usesOldSelf && rt.holds()
		// kube's messageExpression sees oldSelf as a plain value.
		detail, stop := r.message(e, vars)
		if stop != "" {
			e.report(ratcheted, api.CauseTypeFieldValueInvalid, at, fmt.Sprintf("Invalid value: %q: %s", s.Type, stop))
			e.out = true
			return
		}
		e.report(ratcheted, reasonType(r.Reason), at, reasonText(r.Reason, s, v, detail))
	}
}

// optionalOldSelf reports whether the rule sees oldSelf as an optional.
func (r *celRule) optionalOldSelf() bool {
	return r.OptionalOldSelf != nil && *r.OptionalOldSelf
}

// fail reports that the budget ran out and stops every further rule.
func (e *celEval) fail(path string, s *Schema, detail string) {
	e.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %q: %s", s.Type, detail))
	e.out = true
}

// report adds a rule's failure as a cause, or, where ratcheting lets it
// pass, as a warning to the request with the text of kube's field error.
func (e *celEval) report(ratcheted bool, typ api.CauseType, path, msg string) {
	if ratcheted {
		apierror.Warn(e.ctx, fieldOrNil(path)+": "+msg)
		return
	}
	e.add(typ, path, msg)
}

// add adds a cause; the root's path is kube's nil field path, "<nil>".
func (e *celEval) add(typ api.CauseType, path, msg string) {
	e.causes = append(e.causes, apierror.Field(typ, fieldOrNil(path), msg))
}

func fieldOrNil(path string) string {
	if path == "" {
		return "<nil>"
	}
	return path
}

// message is the rule's messageExpression's value, else its message, else
// "failed rule: <rule>"; a messageExpression that fails otherwise falls
// back. stop is set, as kube's, when the messageExpression ran out of the
// budget or its call's limit: no further rules run.
func (r *celRule) message(e *celEval, vars map[string]any) (detail, stop string) {
	if r.msgProg != nil {
		out, det, err := r.msgProg.ContextEval(e.ctx, vars)
		if det != nil && det.ActualCost() != nil {
			e.budget -= int64(min(*det.ActualCost(), uint64(math.MaxInt64)))
			if e.budget < 0 {
				return "", "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"
			}
		}
		if err != nil && strings.HasPrefix(err.Error(), "operation cancelled: actual cost limit exceeded") {
			return "", fmt.Sprintf("no further validation rules will be run due to call cost exceeds limit for messageExpression: %q", r.MessageExpression)
		}
		if s, ok := out.(types.String); err == nil && ok {
			if m := strings.TrimSpace(string(s)); m != "" && len(m) <= celMaxMessageExprSize && !strings.Contains(m, "\n") {
				return m, ""
			}
		}
	}
	if r.Message != "" {
		return strings.TrimSpace(r.Message), ""
	}
	return "failed rule: " + r.errorString(), ""
}

// errorString is kube's ruleErrorString: the message, else the rule.
func (r *celRule) errorString() string {
	if r.Message != "" {
		return strings.TrimSpace(r.Message)
	}
	return strings.TrimSpace(r.Rule)
}

// reasonType is the cause type of a failed rule by its reason.
func reasonType(reason string) api.CauseType {
	switch reason {
	case "FieldValueForbidden":
		return api.CauseTypeFieldValueForbidden
	case "FieldValueRequired":
		return api.CauseTypeFieldValueRequired
	case "FieldValueDuplicate":
		return api.CauseTypeFieldValueDuplicate
	}
	return api.CauseTypeFieldValueInvalid
}

// reasonText is the cause's message as kube's field.Error body: objects and
// arrays are not shown, scalars are.
func reasonText(reason string, s *Schema, v any, detail string) string {
	switch reason {
	case "FieldValueForbidden":
		return "Forbidden: " + detail
	case "FieldValueRequired":
		return "Required value: " + detail
	case "FieldValueDuplicate":
		return "Duplicate value: " + show(v)
	}
	if s.Type == "object" || s.Type == "array" {
		return "Invalid value: " + detail
	}
	return fmt.Sprintf("Invalid value: %s: %s", show(v), detail)
}

// celValue converts a JSON value to what CEL sees: integers of integer
// schemas as int, other numbers as double, property names escaped.
func celValue(s *Schema, v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			child := s.Properties[k]
			if child == nil && s.AdditionalProperties != nil {
				child = s.AdditionalProperties.Schema
			}
			if child == nil {
				child = &Schema{}
			}
			if len(s.Properties) > 0 {
				k = escape(k)
			}
			out[k] = celValue(child, x)
		}
		return out
	case []any:
		items := s.Items
		if items == nil {
			items = &Schema{}
		}
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = celValue(items, x)
		}
		return out
	case string:
		return formatted(s, v)
	case bool:
		return v
	case nil:
		return types.NullValue
	}
	f, _ := toFloat(v)
	if (s.Type == "integer" || s.IntOrString || s.Type == "") && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
		return int64(f)
	}
	return f
}

// formatted is a string as the type its format gives it in CEL, as kube's
// UnstructuredToVal: a value that does not parse is an error value, which
// fails the rules that read it.
func formatted(s *Schema, v string) any {
	var err error
	switch s.Format {
	case "byte":
		var b []byte
		if b, err = base64.StdEncoding.DecodeString(v); err == nil {
			return b
		}
	case "duration":
		var d time.Duration
		if d, err = time.ParseDuration(v); err == nil {
			return d
		}
	case "date":
		var t time.Time
		if t, err = time.Parse(time.DateOnly, v); err == nil {
			return t
		}
	case "date-time":
		var t time.Time
		if t, err = time.Parse(time.RFC3339Nano, v); err == nil {
			return t
		}
	default:
		return v
	}
	return types.NewErr("invalid %s %q: %v", s.Format, v, err)
}

// celReserved are the names kube escapes in property names
// (k8s.io/apiserver/pkg/cel/escaping.go).
var celReserved = map[string]bool{
	"true": true, "false": true, "null": true, "in": true, "as": true, "break": true, "const": true,
	"continue": true, "else": true, "for": true, "function": true, "if": true, "import": true,
	"let": true, "loop": true, "package": true, "namespace": true, "return": true, "var": true,
	"void": true, "while": true,
}

// escape is kube's Escape of a property name for CEL.
func escape(name string) string {
	if celReserved[name] {
		return "__" + name + "__"
	}
	return escaper.Replace(name)
}

var (
	escaper   = strings.NewReplacer("__", "__underscores__", ".", "__dot__", "-", "__dash__", "/", "__slash__")
	unescaper = strings.NewReplacer("__underscores__", "__", "__dot__", ".", "__dash__", "-", "__slash__", "/")
)

// unescape is the inverse of escape.
func unescape(name string) string {
	if k := strings.TrimSuffix(strings.TrimPrefix(name, "__"), "__"); celReserved[k] && len(k)+4 == len(name) {
		return k
	}
	return unescaper.Replace(name)
}

// validators compiles s's rules (the definition was checked when written:
// a rule that fails now is skipped) and returns the resource's checks of a
// new object and of an update: the schema, then the rules (both ratcheted
// on update, as kube 1.30+), which kube runs only over an object the
// schema does not block.
func (s *Schema) validators() (create func(context.Context, api.Object) []api.StatusCause, update func(ctx context.Context, obj, old api.Object) []api.StatusCause) {
	s.compileRules("")
	withRules := func(ctx context.Context, causes []api.StatusCause, obj, old api.Object) []api.StatusCause {
		if !s.hasRules {
			return causes
		}
		if blocking(causes) {
			return append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, fieldOrNil(""), "Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation"))
		}
		ctx, cancel := context.WithTimeout(ctx, celEvalTimeout)
		defer cancel()
		return append(causes, s.ValidateRules(ctx, obj, old)...)
	}
	create = func(ctx context.Context, obj api.Object) []api.StatusCause {
		return withRules(ctx, s.Validate(obj), obj, nil)
	}
	update = func(ctx context.Context, obj, old api.Object) []api.StatusCause {
		return withRules(ctx, s.ValidateUpdate(obj, old), obj, old)
	}
	return create, update
}

// blocking reports whether a schema cause keeps kube from running rules
// (hasBlockingErr: unsupported, required, too long, too many, wrong type).
func blocking(causes []api.StatusCause) bool {
	for _, c := range causes {
		switch c.Type {
		case api.CauseTypeFieldValueNotSupported, api.CauseTypeFieldValueRequired, causeTypeInvalid, causeTooMany, "FieldValueTooLong":
			return true
		}
	}
	return false
}

// objectTypes declares the objects of a schema as CEL object types, as
// kube's DeclTypeProvider does, so that rules are checked (an unknown field
// does not compile) and costed field by field. Values stay maps at run time:
// a field of a declared type without an accessor is selected as a map key.
type objectTypes struct {
	types.Provider
	objects map[string]*Schema // by type name: "selfType", "selfType.spec", "selfType.l.@idx"
}

// typeOf returns s's CEL type, declaring the objects in it under name.
func (p *objectTypes) typeOf(s *Schema, name string) *cel.Type {
	switch {
	case s.IntOrString:
		return cel.DynType
	case s.Type == "array" && s.Items != nil:
		return cel.ListType(p.typeOf(s.Items, name+".@idx"))
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return cel.MapType(cel.StringType, p.typeOf(s.AdditionalProperties.Schema, name+".@elem"))
	case s.Type == "object":
		if s.EmbeddedResource {
			s = withTypeMeta(s)
		}
		p.objects[name] = s
		return cel.ObjectType(name)
	}
	return declType(s).typ
}

func (p *objectTypes) FindStructType(name string) (*types.Type, bool) {
	if _, ok := p.objects[name]; ok {
		return types.NewTypeTypeWithParam(types.NewObjectType(name)), true
	}
	return p.Provider.FindStructType(name)
}

func (p *objectTypes) FindStructFieldNames(name string) ([]string, bool) {
	s, ok := p.objects[name]
	if !ok {
		return p.Provider.FindStructFieldNames(name)
	}
	names := make([]string, 0, len(s.Properties))
	for _, k := range sortedKeys(s.Properties) {
		if declared(s.Properties[k]) {
			names = append(names, escape(k))
		}
	}
	return names, true
}

func (p *objectTypes) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	s, ok := p.objects[name]
	if !ok {
		return p.Provider.FindStructFieldType(name, field)
	}
	child := s.Properties[unescape(field)]
	if child == nil || !declared(child) {
		return nil, false
	}
	return &types.FieldType{Type: p.typeOf(child, name+"."+field)}, true
}

// declared reports whether kube gives rules a field of schema s: not when
// s has no type (x-kubernetes-preserve-unknown-fields alone), nor when its
// items or values have none (SchemaDeclType is nil).
func declared(s *Schema) bool {
	switch {
	case s.IntOrString:
		return true
	case s.Type == "array":
		return s.Items != nil && declared(s.Items)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return declared(s.AdditionalProperties.Schema)
	}
	return slices.Contains([]string{"object", "string", "integer", "number", "boolean"}, s.Type)
}

// typeMeta is what kube declares of an object's apiVersion, kind and
// metadata for rules (WithTypeAndObjectMeta): metadata's name and
// generateName only.
var typeMeta = map[string]*Schema{
	"apiVersion": {Type: "string"},
	"kind":       {Type: "string"},
	"metadata": {Type: "object", Properties: map[string]*Schema{
		"name": {Type: "string"}, "generateName": {Type: "string"},
	}},
}

// withTypeMeta returns s with typeMeta's properties, as kube sees a
// resource's root and embedded resources.
func withTypeMeta(s *Schema) *Schema {
	c := *s
	c.Properties = make(map[string]*Schema, len(s.Properties)+len(typeMeta))
	maps.Copy(c.Properties, s.Properties)
	maps.Copy(c.Properties, typeMeta)
	return &c
}
