package cellib

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
)

// lists is kube's lists library (k8s.io/apiserver/pkg/cel/library/
// lists.go) at version 0, the one its environment of new expressions has:
// isSorted, min and max over comparable elements, sum over summable ones,
// indexOf and lastIndexOf over any. (includes, version 1, is declared only
// for rules kube has already stored, which no definition here is.)
var lists = library{
	options: listOptions(),
	estimate: func(sizes checker.CostEstimator, function, _ string, target *checker.AstNode, _ []checker.AstNode) *checker.CallEstimate {
		if !listFunctions[function] || target == nil {
			return nil
		}
		// One comparison per element, plus a traversal of strings and
		// bytes; indexOf and lastIndexOf of a string traverse it.
		el := listElement(*target)
		if el == nil {
			return &checker.CallEstimate{CostEstimate: sizeOf(sizes, *target).MultiplyByCostFactor(common.StringTraversalCostFactor)}
		}
		each := checker.CostEstimate{Min: 1, Max: 1}
		if k := el.Type().Kind(); k == types.StringKind || k == types.BytesKind {
			each = each.Add(sizeOf(sizes, el).MultiplyByCostFactor(common.StringTraversalCostFactor))
		}
		return &checker.CallEstimate{CostEstimate: sizeOf(sizes, *target).MultiplyByCost(each)}
	},
	cost: func(function, _ string, args []ref.Val, _ ref.Val) *uint64 {
		if !listFunctions[function] {
			return nil
		}
		var c uint64
		if len(args) > 0 {
			c = traversalCost(args[0])
		}
		return &c
	},
}

// listFunctions are the names kube costs as one traversal of the receiver.
var listFunctions = map[string]bool{"isSorted": true, "sum": true, "max": true, "min": true, "indexOf": true, "lastIndexOf": true}

// ordered are kube's element types that compare, by the names its
// overload IDs use; zero is the sum of none of them, nil if they do not add.
var ordered = []struct {
	name string
	t    *cel.Type
	zero ref.Val
}{
	{"int", cel.IntType, types.Int(0)},
	{"uint", cel.UintType, types.Uint(0)},
	{"double", cel.DoubleType, types.Double(0)},
	{"bool", cel.BoolType, nil},
	{"duration", cel.DurationType, types.Duration{}},
	{"timestamp", cel.TimestampType, nil},
	{"string", cel.StringType, nil},
	{"bytes", cel.BytesType, nil},
}

func listOptions() []cel.EnvOption {
	var sorted, sums, mins, maxs []cel.FunctionOpt
	for _, c := range ordered {
		n, t := c.name, c.t
		sorted = append(sorted, cel.MemberOverload("list_"+n+"_is_sorted_bool", []*cel.Type{cel.ListType(t)}, cel.BoolType, cel.UnaryBinding(isSorted)))
		mins = append(mins, cel.MemberOverload("list_"+n+"_min_"+n, []*cel.Type{cel.ListType(t)}, t, cel.UnaryBinding(extreme("min", types.IntOne))))
		maxs = append(maxs, cel.MemberOverload("list_"+n+"_max_"+n, []*cel.Type{cel.ListType(t)}, t, cel.UnaryBinding(extreme("max", types.IntNegOne))))
		if zero := c.zero; zero != nil {
			sums = append(sums, cel.MemberOverload("list_"+n+"_sum_"+n, []*cel.Type{cel.ListType(t)}, t, cel.UnaryBinding(func(l ref.Val) ref.Val { return sum(zero, l) })))
		}
	}
	a := cel.TypeParamType("A")
	return []cel.EnvOption{
		cel.Function("isSorted", sorted...),
		cel.Function("sum", sums...),
		cel.Function("min", mins...),
		cel.Function("max", maxs...),
		cel.Function("indexOf", cel.MemberOverload("list_a_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType, cel.BinaryBinding(indexOf))),
		cel.Function("lastIndexOf", cel.MemberOverload("list_a_last_index_of_int", []*cel.Type{cel.ListType(a), a}, cel.IntType, cel.BinaryBinding(lastIndexOf))),
	}
}

func isSorted(l ref.Val) ref.Val {
	it, ok := l.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	var prev traits.Comparer
	for i := it.Iterator(); i.HasNext() == types.True; {
		next := i.Next()
		c, ok := next.(traits.Comparer)
		if !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		if prev != nil && prev.Compare(next) == types.IntOne {
			return types.False
		}
		prev = c
	}
	return types.True
}

func sum(zero, l ref.Val) ref.Val {
	it, ok := l.(traits.Iterable)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	acc := zero.(traits.Adder)
	for i := it.Iterator(); i.HasNext() == types.True; {
		next := i.Next()
		if _, ok := next.(traits.Adder); !ok {
			return types.MaybeNoSuchOverloadErr(next)
		}
		s := acc.Add(next)
		if acc, ok = s.(traits.Adder); !ok {
			// An overflow is an error value, the sum's result.
			return types.MaybeNoSuchOverloadErr(s)
		}
	}
	return acc.(ref.Val)
}

// extreme returns the element others compare to as prefer does (min: 1,
// max: -1), the first of equals; an empty list is an error.
func extreme(name string, prefer ref.Val) func(ref.Val) ref.Val {
	return func(l ref.Val) ref.Val {
		it, ok := l.(traits.Iterable)
		if !ok {
			return types.MaybeNoSuchOverloadErr(l)
		}
		var best traits.Comparer
		for i := it.Iterator(); i.HasNext() == types.True; {
			next := i.Next()
			c, ok := next.(traits.Comparer)
			if !ok {
				return types.MaybeNoSuchOverloadErr(next)
			}
			if best == nil || best.Compare(next) == prefer {
				best = c
			}
		}
		if best == nil {
			return types.NewErr("%s called on empty list", name)
		}
		return best.(ref.Val)
	}
}

func indexOf(l, item ref.Val) ref.Val {
	list, ok := l.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	n := list.Size().(types.Int)
	for i := types.Int(0); i < n; i++ {
		if list.Get(i).Equal(item) == types.True {
			return i
		}
	}
	return types.Int(-1)
}

func lastIndexOf(l, item ref.Val) ref.Val {
	list, ok := l.(traits.Lister)
	if !ok {
		return types.MaybeNoSuchOverloadErr(l)
	}
	for i := list.Size().(types.Int) - 1; i >= 0; i-- {
		if list.Get(i).Equal(item) == types.True {
			return i
		}
	}
	return types.Int(-1)
}
