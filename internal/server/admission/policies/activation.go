package policies

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/listwatch/listwatch/client/api"
)

// activation is what one of kube's ForInput calls evaluates its
// expressions on: the write's variables (object, oldObject, request,
// namespaceObject, params) and the policy's variables, each evaluated
// when first read and then kept, as kube's composition context does. The
// cost of a variable is charged to the expression that first read it.
type activation struct {
	vars      map[string]any
	variables *lazyVariables
}

// activation starts an activation of p on input and param.
func (p *Policy) activation(ctx context.Context, input map[string]any, param api.Object) *activation {
	vars := make(map[string]any, len(input)+2)
	maps.Copy(vars, input)
	if p.hasParams {
		vars["params"] = orNull(param)
	}
	lv := &lazyVariables{ctx: ctx, vars: vars, exprs: p.variables, index: p.variableIndex, vals: make([]ref.Val, len(p.variables))}
	vars["variables"] = lv
	return &activation{vars: vars, variables: lv}
}

var errOutOfBudget = errors.New("validation failed due to running out of cost budget, no further validation rules will be run")

// eval evaluates one expression, charging its cost and that of the
// variables it read first to budget, with kube's error messages.
func (act *activation) eval(ctx context.Context, x expression, budget *int64) (ref.Val, error) {
	val, err := act.evalRaw(ctx, x, budget)
	if err != nil && !errors.Is(err, errOutOfBudget) {
		return nil, fmt.Errorf("expression '%v' resulted in error: %w", x.text, err)
	}
	return val, err
}

// evalRaw is eval with CEL's own errors.
func (act *activation) evalRaw(ctx context.Context, x expression, budget *int64) (ref.Val, error) {
	val, details, err := x.program.ContextEval(ctx, act.vars)
	if err := charge(budget, act.variables.takeCost()); err != nil {
		return nil, err
	}
	if details == nil || details.ActualCost() == nil {
		return nil, errOutOfBudget
	}
	if err := charge(budget, int64(*details.ActualCost())); err != nil {
		return nil, err
	}
	return val, err
}

func charge(budget *int64, cost int64) error {
	if cost > *budget {
		return errOutOfBudget
	}
	*budget -= cost
	return nil
}

// lazyVariables are the variables map of an activation: a variable is
// evaluated on its first read, in the activation, and kept.
type lazyVariables struct {
	ctx   context.Context
	vars  map[string]any
	exprs []expression
	index map[string]int // of exprs, by name
	vals  []ref.Val      // nil until read
	cost  int64          // of the variables evaluated since the last takeCost
}

var (
	_ ref.Val       = (*lazyVariables)(nil)
	_ traits.Mapper = (*lazyVariables)(nil)
)

// takeCost returns the cost of the variables evaluated since it was last
// called.
func (lv *lazyVariables) takeCost() int64 {
	c := lv.cost
	lv.cost = 0
	return c
}

func (lv *lazyVariables) value(i int) ref.Val {
	if v := lv.vals[i]; v != nil {
		return v
	}
	x := lv.exprs[i]
	val, details, err := x.program.ContextEval(lv.ctx, lv.vars)
	switch {
	case details == nil || details.ActualCost() == nil:
		val = types.NewErr("unable to calculate cost of variable %q", x.name)
	case err != nil:
		lv.cost += int64(*details.ActualCost())
		val = types.NewErr("composited variable %q fails to evaluate: %v", x.name, err)
	default:
		lv.cost += int64(*details.ActualCost())
	}
	lv.vals[i] = val
	return val
}

func (lv *lazyVariables) Find(key ref.Val) (ref.Val, bool) {
	name, ok := key.(types.String)
	if !ok {
		return nil, false
	}
	i, ok := lv.index[string(name)]
	if !ok {
		return nil, false
	}
	return lv.value(i), true
}

func (lv *lazyVariables) Get(key ref.Val) ref.Val {
	if v, ok := lv.Find(key); ok {
		return v
	}
	return types.NewErr("no such key: %v", key)
}

func (lv *lazyVariables) Contains(key ref.Val) ref.Val {
	_, ok := lv.Find(key)
	return types.Bool(ok)
}

func (lv *lazyVariables) Iterator() traits.Iterator {
	names := make([]string, len(lv.exprs))
	for i, x := range lv.exprs {
		names[i] = x.name
	}
	return types.NewStringList(types.DefaultTypeAdapter, names).Iterator()
}

func (lv *lazyVariables) Size() ref.Val { return types.Int(len(lv.exprs)) }

func (lv *lazyVariables) ConvertToNative(t reflect.Type) (any, error) {
	return nil, fmt.Errorf("variables cannot be converted to %v", t)
}

func (lv *lazyVariables) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case types.MapType:
		return lv
	case types.TypeType:
		return types.MapType
	}
	return types.NewErr("type conversion error from map to '%s'", t.TypeName())
}

func (lv *lazyVariables) Equal(other ref.Val) ref.Val { return types.Bool(other == ref.Val(lv)) }
func (lv *lazyVariables) Type() ref.Type              { return types.MapType }
func (lv *lazyVariables) Value() any                  { return lv }
