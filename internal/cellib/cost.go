package cellib

import (
	"math"

	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// The helpers of kube's CostEstimator (k8s.io/apiserver/pkg/cel/library/
// cost.go), which every library's costs are written with.

// convertToType is the conversions kube's types allow: to themselves and
// to their type.
func convertToType(v ref.Val, t ref.Type) ref.Val {
	switch t {
	case v.Type():
		return v
	case types.TypeType:
		return v.Type().(*types.Type)
	}
	return types.NewErr("type conversion error from '%s' to '%s'", v.Type(), t)
}

// nominal is the static cost of an accessor or a comparison: 1.
var nominal = &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}}

// costOf returns a runtime cost.
func costOf(c uint64) *uint64 { return &c }

// sizeOf is kube's sizeEstimate: the size cel-go computed for the node,
// else the schema's bound, else unbounded.
func sizeOf(sizes checker.CostEstimator, n checker.AstNode) checker.SizeEstimate {
	if sz := n.ComputedSize(); sz != nil {
		return *sz
	}
	if sizes != nil {
		if sz := sizes.EstimateSize(n); sz != nil {
			return *sz
		}
	}
	return checker.SizeEstimate{Min: 0, Max: math.MaxUint64}
}

// actualSize is the size of a runtime value, 1 for a value without one.
func actualSize(v ref.Val) uint64 {
	if sz, ok := v.(traits.Sizer); ok {
		return uint64(sz.Size().(types.Int))
	}
	return 1
}

// traversal is the runtime cost of reading n bytes of a string, rounded up.
func traversal(n uint64) uint64 {
	return uint64(math.Ceil(float64(n) * common.StringTraversalCostFactor))
}

// traversalCost is kube's cost of walking a value as a tree: its strings'
// and bytes' lengths times the traversal factor (rounded down), 1 for any
// other leaf.
func traversalCost(v ref.Val) uint64 {
	switch v := v.(type) {
	case types.String:
		return uint64(float64(len(v)) * common.StringTraversalCostFactor)
	case types.Bytes:
		return uint64(float64(len(v)) * common.StringTraversalCostFactor)
	case traits.Lister:
		var c uint64
		for it := v.Iterator(); it.HasNext() == types.True; {
			c += traversalCost(it.Next())
		}
		return c
	case traits.Mapper:
		var c uint64
		for it := v.Iterator(); it.HasNext() == types.True; {
			k := it.Next()
			c += traversalCost(k) + traversalCost(v.Get(k))
		}
		return c
	}
	return 1
}

// regexCost is kube's cost of matching a regex of regexSize bytes against
// a string of strSize: both traversed, the string's plus one.
func regexCost(strSize, regexSize uint64) uint64 {
	str := uint64(math.Ceil((1.0 + float64(strSize)) * common.StringTraversalCostFactor))
	return str * uint64(math.Ceil(float64(regexSize)*common.RegexStringLengthCostFactor))
}

// strings are cel-go's string extensions as kube costs them: a traversal
// of the receiver, twice for those that build a result of its size.
var stringCosts = library{
	estimate: func(sizes checker.CostEstimator, function, _ string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		if target == nil {
			return nil
		}
		sz := sizeOf(sizes, *target)
		switch function {
		case "lowerAscii", "upperAscii", "substring", "trim":
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &sz}
		case "replace":
			if len(args) >= 2 {
				size := replacedSize(sz, sizeOf(sizes, args[0]), sizeOf(sizes, args[1]))
				return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &size}
			}
		case "split":
			most := sz.Max
			if len(args) > 1 {
				if v := args[1].Expr().AsLiteral(); v != nil {
					if i, ok := v.Value().(int64); ok {
						most = uint64(i)
					}
				}
			}
			return &checker.CallEstimate{CostEstimate: sz.MultiplyByCostFactor(2 * common.StringTraversalCostFactor), ResultSize: &checker.SizeEstimate{Min: 0, Max: most}}
		case "join":
			var size checker.SizeEstimate
			if el := listElement(*target); el != nil {
				size = sz.Multiply(sizeOf(sizes, el))
			}
			if len(args) > 0 {
				var seps checker.SizeEstimate
				if sz.Min > 0 {
					seps.Min = sz.Min - 1
				}
				if sz.Max > 0 {
					seps.Max = sz.Max - 1
				}
				size = size.Add(sizeOf(sizes, args[0]).Multiply(seps))
			}
			return &checker.CallEstimate{CostEstimate: size.MultiplyByCostFactor(common.StringTraversalCostFactor), ResultSize: &size}
		}
		return nil
	},
	cost: func(function, _ string, args []ref.Val, result ref.Val) *uint64 {
		if len(args) == 0 {
			return nil
		}
		switch function {
		case "lowerAscii", "upperAscii", "substring", "trim":
			return costOf(traversal(actualSize(args[0])))
		case "replace", "split":
			return costOf(uint64(math.Ceil(float64(actualSize(args[0])) * 2 * common.StringTraversalCostFactor)))
		case "join":
			return costOf(uint64(math.Ceil(float64(actualSize(result)) * 2 * common.StringTraversalCostFactor)))
		}
		return nil
	},
}

// replacedSize is kube's bound of the size of s.replace(old, new).
func replacedSize(s, old, new checker.SizeEstimate) checker.SizeEstimate {
	var count, kept checker.SizeEstimate
	switch {
	case old.Min == 0:
		// An empty old string is replaced around every byte.
		count.Max = s.Max
		if s.Max < math.MaxUint64 {
			count.Max++
		}
		kept.Max = s.Max
	case new.Max <= old.Min:
		kept.Max = s.Max
	default:
		count.Max = uint64(math.Ceil(float64(s.Max) / float64(old.Min)))
	}
	switch {
	case old.Max == 0:
		count.Min = s.Min
		if s.Min < math.MaxUint64 {
			count.Min++
		}
		kept.Min = s.Min
	case old.Max <= new.Min:
		kept.Min = s.Min
	default:
		count.Min = uint64(math.Ceil(float64(s.Min) / float64(old.Max)))
	}
	return count.Multiply(new).Add(kept)
}

// elementNode stands for the elements of a list in size estimates: the
// list's path and "@items", so that the schema's maxLength of its items
// bounds them, as kube's itemsNode.
type elementNode struct {
	path []string
	t    *types.Type
}

func (n elementNode) Path() []string                      { return n.path }
func (n elementNode) Type() *types.Type                   { return n.t }
func (n elementNode) Expr() ast.Expr                      { return nil }
func (n elementNode) ComputedSize() *checker.SizeEstimate { return nil }

// listElement is the element node of a list-typed node, nil for another.
func listElement(list checker.AstNode) checker.AstNode {
	params := list.Type().Parameters()
	if len(params) == 0 {
		return nil
	}
	n := elementNode{t: params[0]}
	if p := list.Path(); p != nil {
		n.path = append(append(make([]string, 0, len(p)+1), p...), "@items")
	}
	return n
}
