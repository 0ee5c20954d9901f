package cellib

import (
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// stringBinding binds a function of one string.
func stringBinding(f func(string) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(a ref.Val) ref.Val {
		s, ok := a.(types.String)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(string(s))
	})
}

// parseEstimate is the static cost of a call that traverses its first
// argument, a string, times times.
func parseEstimate(sizes checker.CostEstimator, args []checker.AstNode, times float64) *checker.CallEstimate {
	if len(args) < 1 {
		return nil
	}
	return &checker.CallEstimate{CostEstimate: sizeOf(sizes, args[0]).MultiplyByCostFactor(times * common.StringTraversalCostFactor)}
}

// parseCost is the runtime cost of a call that traverses its first
// argument times.
func parseCost(args []ref.Val, times float64) *uint64 {
	if len(args) < 1 {
		return nil
	}
	return costOf(uint64(math.Ceil(float64(actualSize(args[0])) * times * common.StringTraversalCostFactor)))
}

// equalsEstimate is the static cost of == on two values of type t: one.
func equalsEstimate(args []checker.AstNode, t *cel.Type) *checker.CallEstimate {
	if len(args) == 2 && args[0].Type().IsExactType(t) && args[1].Type().IsExactType(t) {
		return nominal
	}
	return nil
}

// equalsCost is the runtime cost of == with a value of type T on the left:
// one.
func equalsCost[T ref.Val](args []ref.Val) *uint64 {
	if len(args) == 2 {
		if _, ok := args[0].(T); ok {
			return costOf(1)
		}
	}
	return nil
}
