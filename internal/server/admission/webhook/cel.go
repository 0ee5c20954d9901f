package webhook

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/cellib"
	"github.com/listwatch/listwatch/internal/server/crd"
)

// condition is one of a webhook's matchConditions.
type condition struct {
	Name       string `json:"name"`
	Expression string `json:"expression"`
}

// conditionCostBudget is kube's runtime cost budget of a webhook's match
// conditions (RuntimeCELCostBudgetMatchConditions).
const conditionCostBudget = 2_500_000

// conditionEnv is the CRD rules' environment with the variables of
// admission match conditions: object, oldObject and request (typed as
// kube's AdmissionRequest there, dynamic here), and the authorizer
// variables.
var conditionEnv = func() *cel.Env {
	env, err := crd.BaseCELEnv().Extend(append(AuthorizerVariables(),
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType),
	)...)
	if err != nil {
		panic(err)
	}
	return env
}()

// AuthorizerVariables declare kube's authorizer and
// authorizer.requestResource, which admission expressions (but a
// ValidatingAdmissionPolicy's messageExpressions) may use.
func AuthorizerVariables() []cel.EnvOption {
	return []cel.EnvOption{
		cel.Variable("authorizer", cellib.AuthorizerType),
		cel.Variable("authorizer.requestResource", cellib.ResourceCheckType),
	}
}

// AuthorizerValues are the values of the authorizer variables for a's
// user, checked by a.Authorizer; none when it is nil.
func AuthorizerValues(ctx context.Context, a *Attributes, vars map[string]any) {
	if a.Authorizer == nil {
		return
	}
	vars["authorizer"] = cellib.NewAuthorizer(ctx, a.Authorizer, a.User)
	vars["authorizer.requestResource"] = cellib.NewResourceCheck(ctx, a.Authorizer, a.User,
		a.Resource.Group, a.Resource.Resource, a.Subresource, a.Namespace, a.Name)
}

// conditions are a webhook's compiled match conditions.
type conditions struct {
	names    []string
	exprs    []string
	programs []cel.Program
	ignore   bool // failurePolicy Ignore: an error means no match
}

func compileConditions(cs []condition, ignore bool) (*conditions, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	out := &conditions{ignore: ignore}
	for _, c := range cs {
		prg, detail := compileCondition(c.Expression)
		if detail != "" {
			return nil, fmt.Errorf("matchConditions %q: %s", c.Name, detail)
		}
		out.names = append(out.names, c.Name)
		out.exprs = append(out.exprs, c.Expression)
		out.programs = append(out.programs, prg)
	}
	return out, nil
}

// compileCondition compiles one expression, or says why it does not, in
// kube's words.
func compileCondition(expr string) (cel.Program, string) {
	ast, iss := conditionEnv.Compile(expr)
	if iss.Err() != nil {
		return nil, "compilation failed: " + iss.String()
	}
	if !ast.OutputType().IsExactType(types.BoolType) {
		return nil, fmt.Sprintf("must evaluate to bool but got %v", ast.OutputType())
	}
	prg, err := conditionEnv.Program(ast, ProgramOptions(conditionCostBudget)...)
	if err != nil {
		return nil, "unexpected compilation error: " + err.Error()
	}
	return prg, ""
}

// ProgramOptions are those of admission expressions' programs: kube's
// cost estimates, charged against limit.
func ProgramOptions(limit uint64) []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.CostLimit(limit),
		cel.InterruptCheckFrequency(100),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostTracking(cellib.Costs{}),
	}
}

// ConditionCauses checks that the match conditions of a configuration's
// webhooks compile, as kube's validation does: a FieldValueInvalid cause
// for each that does not.
func ConditionCauses(obj api.Object) []api.StatusCause {
	var causes []api.StatusCause
	hooks, _ := obj["webhooks"].([]any)
	for i, h := range hooks {
		hook, _ := h.(map[string]any)
		conds, _ := hook["matchConditions"].([]any)
		for j, c := range conds {
			cond, _ := c.(map[string]any)
			expr, _ := cond["expression"].(string)
			if strings.TrimSpace(expr) == "" {
				continue // the configuration's own validation requires it
			}
			if _, detail := compileCondition(expr); detail != "" {
				causes = append(causes, api.StatusCause{Type: api.CauseTypeFieldValueInvalid,
					Field:   fmt.Sprintf("webhooks[%d].matchConditions[%d].expression", i, j),
					Message: "Invalid value: " + strconv.Quote(expr) + ": " + detail})
			}
		}
	}
	return causes
}

// errConditionBudget is kube's error when a webhook's match conditions
// together cost more than conditionCostBudget.
var errConditionBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// match evaluates the conditions as kube's matcher: any false is no match;
// otherwise an error fails the request (failurePolicy Fail) or is no match
// (Ignore). The conditions share one cost budget, and stop with ctx.
func (cs *conditions) match(ctx context.Context, vars map[string]any) (bool, error) {
	if cs == nil {
		return true, nil
	}
	budget := uint64(conditionCostBudget)
	var errs []error
	for i, prg := range cs.programs {
		v, det, err := prg.ContextEval(ctx, vars)
		cost := det.ActualCost()
		if cost == nil || *cost > budget {
			return cs.failed(errConditionBudget)
		}
		budget -= *cost
		if err != nil {
			errs = append(errs, fmt.Errorf("expression '%s' resulted in error: %w", cs.exprs[i], err))
			continue
		}
		b, ok := v.Value().(bool)
		if !ok {
			errs = append(errs, fmt.Errorf("expression '%s' resulted in non-bool value", cs.exprs[i]))
			continue
		}
		if !b {
			return false, nil
		}
	}
	if len(errs) == 0 {
		return true, nil
	}
	return cs.failed(errors.Join(errs...))
}

// failed is what an error of the conditions makes of the webhook: no
// match under failurePolicy Ignore, else the request's failure.
func (cs *conditions) failed(err error) (bool, error) {
	if cs.ignore {
		return false, nil
	}
	return false, err
}
