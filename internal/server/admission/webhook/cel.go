package webhook

import (
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/interpreter"

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
// kube's AdmissionRequest there, dynamic here). The authorizer variable is
// not declared: an expression using it does not compile.
var conditionEnv = func() *cel.Env {
	env, err := crd.BaseCELEnv().Extend(
		cel.Variable("object", cel.DynType),
		cel.Variable("oldObject", cel.DynType),
		cel.Variable("request", cel.DynType),
	)
	if err != nil {
		panic(err)
	}
	return env
}()

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
		ast, iss := conditionEnv.Compile(c.Expression)
		if iss.Err() != nil {
			return nil, fmt.Errorf("matchConditions %q: compilation failed: %w", c.Name, iss.Err())
		}
		if !ast.OutputType().IsExactType(types.BoolType) && !ast.OutputType().IsExactType(types.DynType) {
			return nil, fmt.Errorf("matchConditions %q: must evaluate to bool", c.Name)
		}
		prg, err := conditionEnv.Program(ast,
			cel.CostLimit(conditionCostBudget),
			cel.InterruptCheckFrequency(100),
			cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
			cel.CostTracking(cellib.Costs{}))
		if err != nil {
			return nil, fmt.Errorf("matchConditions %q: %w", c.Name, err)
		}
		out.names = append(out.names, c.Name)
		out.exprs = append(out.exprs, c.Expression)
		out.programs = append(out.programs, prg)
	}
	return out, nil
}

// match evaluates the conditions as kube's matcher: any false is no match;
// otherwise an error fails the request (failurePolicy Fail) or is no match
// (Ignore).
func (cs *conditions) match(vars map[string]any) (bool, error) {
	if cs == nil {
		return true, nil
	}
	var errs []error
	for i, prg := range cs.programs {
		v, _, err := prg.Eval(vars)
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
	if cs.ignore {
		return false, nil
	}
	return false, errors.Join(errs...)
}
