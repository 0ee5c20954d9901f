package cellib

import (
	"errors"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/listwatch/listwatch/internal/quantity"
)

// quantityLib is kube's kubernetes.quantity library: resource quantities
// ("1.5Gi", "200m") parsed, compared and added by apimachinery's
// resource.Quantity, as kube's library does, so that its observable
// quirks are kube's: a value held in an int64 is an integer only while no
// arithmetic or parse moved it to arbitrary precision, and equality holds
// only with a parsed quantity on the right. A text spanning more than
// quantity.MaxSpan places is refused, where kube would try (for minutes).
var quantityLib = library{
	options: []cel.EnvOption{
		cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, QuantityType, stringBinding(func(s string) ref.Val {
			q, err := quantity.Parse(s)
			if err != nil {
				return types.WrapErr(err)
			}
			return quantityVal{q: &q}
		}))),
		cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, stringBinding(func(s string) ref.Val {
			_, err := quantity.Parse(s)
			return types.Bool(err == nil)
		}))),
		// kube declares sign as a global function, unlike the others.
		cel.Function("sign", cel.Overload("quantity_sign", []*cel.Type{QuantityType}, cel.IntType, quantityUnary(func(q *resource.Quantity) ref.Val { return types.Int(q.Sign()) }))),
		cel.Function("isGreaterThan", cel.MemberOverload("quantity_is_greater_than", []*cel.Type{QuantityType, QuantityType}, cel.BoolType, quantityBinary(func(q, o *resource.Quantity) ref.Val { return types.Bool(q.Cmp(*o) == 1) }))),
		cel.Function("isLessThan", cel.MemberOverload("quantity_is_less_than", []*cel.Type{QuantityType, QuantityType}, cel.BoolType, quantityBinary(func(q, o *resource.Quantity) ref.Val { return types.Bool(q.Cmp(*o) == -1) }))),
		cel.Function("compareTo", cel.MemberOverload("quantity_compare_to", []*cel.Type{QuantityType, QuantityType}, cel.IntType, quantityBinary(func(q, o *resource.Quantity) ref.Val { return types.Int(q.Cmp(*o)) }))),
		cel.Function("asApproximateFloat", cel.MemberOverload("quantity_get_float", []*cel.Type{QuantityType}, cel.DoubleType, quantityUnary(func(q *resource.Quantity) ref.Val { return types.Double(q.AsApproximateFloat64()) }))),
		cel.Function("asInteger", cel.MemberOverload("quantity_get_int", []*cel.Type{QuantityType}, cel.IntType, quantityUnary(func(q *resource.Quantity) ref.Val {
			v, ok := q.AsInt64()
			if !ok {
				return types.WrapErr(errors.New("cannot convert value to integer"))
			}
			return types.Int(v)
		}))),
		cel.Function("isInteger", cel.MemberOverload("quantity_is_integer", []*cel.Type{QuantityType}, cel.BoolType, quantityUnary(func(q *resource.Quantity) ref.Val {
			_, ok := q.AsInt64()
			return types.Bool(ok)
		}))),
		cel.Function("add",
			cel.MemberOverload("quantity_add", []*cel.Type{QuantityType, QuantityType}, QuantityType, quantityBinary(onCopy((*resource.Quantity).Add))),
			cel.MemberOverload("quantity_add_int", []*cel.Type{QuantityType, cel.IntType}, QuantityType, quantityInt(onCopy((*resource.Quantity).Add)))),
		cel.Function("sub",
			cel.MemberOverload("quantity_sub", []*cel.Type{QuantityType, QuantityType}, QuantityType, quantityBinary(onCopy((*resource.Quantity).Sub))),
			cel.MemberOverload("quantity_sub_int", []*cel.Type{QuantityType, cel.IntType}, QuantityType, quantityInt(onCopy((*resource.Quantity).Sub)))),
	},
	estimate: func(sizes checker.CostEstimator, function, overload string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
		switch function {
		case "quantity", "isQuantity":
			return parseEstimate(sizes, args, 1)
		case "sign", "isGreaterThan", "isLessThan", "compareTo", "asApproximateFloat", "asInteger", "isInteger", "add", "sub":
			return nominal
		case operators.Equals:
			return equalsEstimate(args, QuantityType)
		}
		return nil
	},
	cost: func(function, overload string, args []ref.Val, result ref.Val) *uint64 {
		switch function {
		case "quantity", "isQuantity":
			return parseCost(args, 1)
		case "sign", "isGreaterThan", "isLessThan", "compareTo", "asApproximateFloat", "asInteger", "isInteger", "add", "sub":
			return costOf(1)
		case operators.Equals:
			return equalsCost[quantityVal](args)
		}
		return nil
	},
}

// QuantityType is kube's CEL type of a quantity.
var QuantityType = cel.ObjectType("kubernetes.Quantity")

var quantityTypeValue = types.NewTypeValue("kubernetes.Quantity")

// quantityVal is a quantity in CEL. computed marks the result of add or
// sub, which kube returns by pointer: its Equal accepts only a parsed
// quantity on the right, so a computed one there is "no such overload".
type quantityVal struct {
	q        *resource.Quantity
	computed bool
}

func (v quantityVal) ConvertToNative(t reflect.Type) (any, error) {
	return nil, errors.New("type conversion error from 'Quantity' to '" + t.String() + "'")
}

func (v quantityVal) ConvertToType(t ref.Type) ref.Val {
	switch t {
	case quantityTypeValue:
		return v
	case types.TypeType:
		return quantityTypeValue
	}
	return types.NewErr("type conversion error from '%s' to '%s'", quantityTypeValue, t)
}

func (v quantityVal) Equal(other ref.Val) ref.Val {
	o, ok := other.(quantityVal)
	if !ok || o.computed {
		return types.MaybeNoSuchOverloadErr(other)
	}
	return types.Bool(v.q.Equal(*o.q))
}

func (v quantityVal) Type() ref.Type { return quantityTypeValue }
func (v quantityVal) Value() any     { return v.q }

// onCopy is kube's add or sub: op on a copy of q.
func onCopy(op func(q *resource.Quantity, o resource.Quantity)) func(q, o *resource.Quantity) ref.Val {
	return func(q, o *resource.Quantity) ref.Val {
		r := q.DeepCopy()
		op(&r, *o)
		return quantityVal{q: &r, computed: true}
	}
}

func quantityUnary(f func(*resource.Quantity) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(a ref.Val) ref.Val {
		q, ok := a.(quantityVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(q.q)
	})
}

func quantityBinary(f func(q, o *resource.Quantity) ref.Val) cel.OverloadOpt {
	return cel.BinaryBinding(func(a, b ref.Val) ref.Val {
		q, ok := a.(quantityVal)
		o, ok2 := b.(quantityVal)
		if !ok || !ok2 {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(q.q, o.q)
	})
}

// quantityInt binds an overload whose operand is an int, which kube makes
// a quantity of scale 0.
func quantityInt(f func(q, o *resource.Quantity) ref.Val) cel.OverloadOpt {
	return cel.BinaryBinding(func(a, b ref.Val) ref.Val {
		q, ok := a.(quantityVal)
		i, ok2 := b.(types.Int)
		if !ok || !ok2 {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(q.q, resource.NewQuantity(int64(i), resource.DecimalExponent))
	})
}
