package cellib

import (
	"math"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
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

// argSize is kube's estimated size of a call's argument: computed by
// cel-go, else by the caller's estimator, else unbounded.
func argSize(sizes checker.CostEstimator, n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sz := sizes.EstimateSize(n); sz != nil {
		return *sz
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

// parseEstimate is the static cost of a call that traverses its first
// argument, a string, times times.
func parseEstimate(sizes checker.CostEstimator, args []checker.AstNode, times float64) *checker.CallEstimate {
	if len(args) < 1 {
		return nil
	}
	return &checker.CallEstimate{CostEstimate: argSize(sizes, args[0]).MultiplyByCostFactor(times * common.StringTraversalCostFactor)}
}

// valueSize is the size of a runtime value as kube's cost counts it: a
// string's characters, an IP's or CIDR's bytes, else 1.
func valueSize(v ref.Val) uint64 {
	if s, ok := v.(traits.Sizer); ok {
		if n, ok := s.Size().(types.Int); ok {
			return uint64(n)
		}
	}
	return 1
}

// traversalCost is kube's runtime cost of traversing size units times.
func traversalCost(size uint64, times float64) uint64 {
	return uint64(math.Ceil(float64(size) * times * common.StringTraversalCostFactor))
}

// parseCost is the runtime cost of a call that traverses its first
// argument times.
func parseCost(args []ref.Val, times float64) *uint64 {
	if len(args) < 1 {
		return nil
	}
	c := traversalCost(valueSize(args[0]), times)
	return &c
}

func unitEstimate() *checker.CallEstimate {
	return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}}
}

func unitCost() *uint64 {
	c := uint64(1)
	return &c
}

// equalsEstimate is the static cost of == on two values of type t: one.
func equalsEstimate(args []checker.AstNode, t *cel.Type) *checker.CallEstimate {
	if len(args) == 2 && args[0].Type().IsExactType(t) && args[1].Type().IsExactType(t) {
		return unitEstimate()
	}
	return nil
}
