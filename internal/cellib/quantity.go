package cellib

import (
	"cmp"
	"errors"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// quantityLib is kube's kubernetes.quantity library: resource quantities
// ("1.5Gi", "200m") parsed, compared and added as kube's resource.Quantity
// does it, whose observable quirks it keeps: a value held in an int64 is an
// integer only while no arithmetic or parse moved it to arbitrary precision,
// and equality holds only with a parsed quantity on the right.
var quantityLib = library{
	options: []cel.EnvOption{
		cel.Function("quantity", cel.Overload("string_to_quantity", []*cel.Type{cel.StringType}, QuantityType, stringBinding(func(s string) ref.Val {
			q, err := parseQuantity(s)
			if err != nil {
				return types.WrapErr(err)
			}
			return quantityVal{q: q}
		}))),
		cel.Function("isQuantity", cel.Overload("is_quantity_string", []*cel.Type{cel.StringType}, cel.BoolType, stringBinding(func(s string) ref.Val {
			_, err := parseQuantity(s)
			return types.Bool(err == nil)
		}))),
		// kube declares sign as a global function, unlike the others.
		cel.Function("sign", cel.Overload("quantity_sign", []*cel.Type{QuantityType}, cel.IntType, quantityUnary(func(q *quantity) ref.Val { return types.Int(q.sign()) }))),
		cel.Function("isGreaterThan", cel.MemberOverload("quantity_is_greater_than", []*cel.Type{QuantityType, QuantityType}, cel.BoolType, quantityBinary(func(q, o *quantity) ref.Val { return types.Bool(q.cmp(o) == 1) }))),
		cel.Function("isLessThan", cel.MemberOverload("quantity_is_less_than", []*cel.Type{QuantityType, QuantityType}, cel.BoolType, quantityBinary(func(q, o *quantity) ref.Val { return types.Bool(q.cmp(o) == -1) }))),
		cel.Function("compareTo", cel.MemberOverload("quantity_compare_to", []*cel.Type{QuantityType, QuantityType}, cel.IntType, quantityBinary(func(q, o *quantity) ref.Val { return types.Int(q.cmp(o)) }))),
		cel.Function("asApproximateFloat", cel.MemberOverload("quantity_get_float", []*cel.Type{QuantityType}, cel.DoubleType, quantityUnary(func(q *quantity) ref.Val { return types.Double(q.approximateFloat()) }))),
		cel.Function("asInteger", cel.MemberOverload("quantity_get_int", []*cel.Type{QuantityType}, cel.IntType, quantityUnary(func(q *quantity) ref.Val {
			v, ok := q.asInt64()
			if !ok {
				return types.WrapErr(errors.New("cannot convert value to integer"))
			}
			return types.Int(v)
		}))),
		cel.Function("isInteger", cel.MemberOverload("quantity_is_integer", []*cel.Type{QuantityType}, cel.BoolType, quantityUnary(func(q *quantity) ref.Val {
			_, ok := q.asInt64()
			return types.Bool(ok)
		}))),
		cel.Function("add",
			cel.MemberOverload("quantity_add", []*cel.Type{QuantityType, QuantityType}, QuantityType, quantityBinary(func(q, o *quantity) ref.Val { return q.plus(o, false) })),
			cel.MemberOverload("quantity_add_int", []*cel.Type{QuantityType, cel.IntType}, QuantityType, quantityInt(func(q, o *quantity) ref.Val { return q.plus(o, false) }))),
		cel.Function("sub",
			cel.MemberOverload("quantity_sub", []*cel.Type{QuantityType, QuantityType}, QuantityType, quantityBinary(func(q, o *quantity) ref.Val { return q.plus(o, true) })),
			cel.MemberOverload("quantity_sub_int", []*cel.Type{QuantityType, cel.IntType}, QuantityType, quantityInt(func(q, o *quantity) ref.Val { return q.plus(o, true) }))),
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
			if len(args) == 2 {
				if _, ok := args[0].(quantityVal); ok {
					return costOf(1)
				}
			}
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
	q        *quantity
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
	return types.Bool(v.q.cmp(o.q) == 0)
}

func (v quantityVal) Type() ref.Type { return quantityTypeValue }
func (v quantityVal) Value() any     { return v.q }

func quantityUnary(f func(*quantity) ref.Val) cel.OverloadOpt {
	return cel.UnaryBinding(func(a ref.Val) ref.Val {
		q, ok := a.(quantityVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(q.q)
	})
}

func quantityBinary(f func(q, o *quantity) ref.Val) cel.OverloadOpt {
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
func quantityInt(f func(q, o *quantity) ref.Val) cel.OverloadOpt {
	return cel.BinaryBinding(func(a, b ref.Val) ref.Val {
		q, ok := a.(quantityVal)
		i, ok2 := b.(types.Int)
		if !ok || !ok2 {
			return types.MaybeNoSuchOverloadErr(a)
		}
		return f(q.q, &quantity{value: int64(i)})
	})
}

// A quantity is kube's resource.Quantity as far as CEL sees it: either an
// int64 value times 10^scale, or, once that cannot hold it, dec times
// 10^-decScale (an inf.Dec). The two forms answer isInteger and
// asApproximateFloat differently for the same value, as kube's do.
type quantity struct {
	value    int64
	scale    int32
	dec      *big.Int
	decScale int32
}

// The errors of kube's resource.ParseQuantity.
var (
	errQuantityFormat  = errors.New("quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'")
	errQuantityNumeric = errors.New("unable to parse numeric part of quantity")
	errQuantitySuffix  = errors.New("unable to parse quantity's suffix")
	// errQuantityTooLarge refuses what kube would expand into a number of
	// more than maxQuantityDigits digits (it tries, taking minutes and
	// memory without bound).
	errQuantityTooLarge = errors.New("quantity exceeds the supported precision")
)

const maxQuantityDigits = 1 << 16

// nanoScale is the finest quantity: kube rounds anything finer up to it.
const nanoScale = -9

// parseQuantity is kube's resource.ParseQuantity.
func parseQuantity(str string) (*quantity, error) {
	if str == "" {
		return nil, errQuantityFormat
	}
	if str == "0" {
		return &quantity{}, nil
	}
	positive, value, num, denom, suf, err := splitQuantity(str)
	if err != nil {
		return nil, err
	}
	base, exponent, ok := quantitySuffix(suf)
	if !ok {
		return nil, errQuantitySuffix
	}
	binary := base == 2
	// The int64 form holds the value when its digits fit in an int64 and it
	// is no finer than nano.
	precision, scale, mantissa := int32(-1), int32(0), int64(1)
	switch {
	case !binary:
		scale = exponent
		precision = 18 - int32(len(num)+len(denom))
	case len(denom) == 0:
		mantissa <<= uint(exponent)
		precision = 15 - int32(len(num)) - int32(float32(exponent)*3/10) - 1
	}
	if precision >= 0 {
		scale -= int32(len(denom))
		if scale >= nanoScale {
			v, err := strconv.ParseInt(num+denom, 10, 64)
			if err != nil {
				return nil, errQuantityNumeric
			}
			if r, ok := int64Multiply(v, mantissa); ok {
				if !positive {
					r = -r
				}
				return &quantity{value: r, scale: scale}, nil
			}
		}
	}

	// The arbitrary-precision form: value's digits scaled by the suffix,
	// rounded up to nano, binary ones capped at the largest int64.
	dec, decScale, ok := parseDecimal(value)
	if !ok {
		return nil, errQuantityNumeric
	}
	if binary {
		dec.Lsh(dec, uint(exponent))
	} else {
		decScale += -exponent
	}
	neg := dec.Sign() < 0
	dec.Abs(dec)
	if dec.Sign() != 0 {
		if dec, err = roundUp(dec, decScale, -nanoScale); err != nil {
			return nil, err
		}
		decScale = -nanoScale
	}
	if binary && decCmp(dec, decScale, big.NewInt(math.MaxInt64), 0) > 0 {
		dec, decScale = big.NewInt(math.MaxInt64), 0
	}
	if neg {
		dec.Neg(dec)
	}
	return &quantity{dec: dec, decScale: decScale}, nil
}

// splitQuantity is kube's parseQuantityString: the sign, the number as
// written, its integer and fraction digits (leading zeros dropped) and the
// suffix.
func splitQuantity(str string) (positive bool, value, num, denom, suffix string, err error) {
	positive = true
	pos, end := 0, len(str)
	switch str[0] {
	case '-':
		positive = false
		pos++
	case '+':
		pos++
	}
	for pos < end && str[pos] == '0' {
		pos++
	}
	if pos == end {
		return positive, "0", "0", "", "", nil
	}
	i := pos
	for i < end && isDigit(str[i]) {
		i++
	}
	num = str[pos:i]
	if i == end {
		return positive, str, num, "", "", nil
	}
	pos = i
	if num == "" {
		num = "0"
	}
	if str[pos] == '.' {
		pos++
		i = pos
		for i < end && isDigit(str[i]) {
			i++
		}
		denom = str[pos:i]
		if i == end {
			return positive, str, num, denom, "", nil
		}
		pos = i
	}
	value = str[:pos]
	start := pos
	for pos < end && strings.IndexByte("eEinumkKMGTP", str[pos]) >= 0 {
		pos++
	}
	if pos < end && (str[pos] == '-' || str[pos] == '+') {
		pos++
	}
	for pos < end && isDigit(str[pos]) {
		pos++
	}
	if pos < end {
		return positive, value, num, denom, "", errQuantityFormat
	}
	return positive, value, num, denom, str[start:], nil
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// quantitySuffix is the base and exponent a suffix multiplies by. The
// exponent of "e<n>" is n truncated to 32 bits, as kube's is.
func quantitySuffix(s string) (base, exponent int32, ok bool) {
	switch s {
	case "":
		return 10, 0, true
	case "n":
		return 10, -9, true
	case "u":
		return 10, -6, true
	case "m":
		return 10, -3, true
	case "k":
		return 10, 3, true
	case "M":
		return 10, 6, true
	case "G":
		return 10, 9, true
	case "T":
		return 10, 12, true
	case "P":
		return 10, 15, true
	case "E":
		return 10, 18, true
	case "Ki":
		return 2, 10, true
	case "Mi":
		return 2, 20, true
	case "Gi":
		return 2, 30, true
	case "Ti":
		return 2, 40, true
	case "Pi":
		return 2, 50, true
	case "Ei":
		return 2, 60, true
	}
	if len(s) > 1 && (s[0] == 'e' || s[0] == 'E') {
		n, err := strconv.ParseInt(s[1:], 10, 64)
		if err != nil {
			return 0, 0, false
		}
		return 10, int32(n), true
	}
	return 0, 0, false
}

// parseDecimal reads [+-]digits[.digits] as inf.Dec's SetString does: the
// unscaled digits and the count of those after the point.
func parseDecimal(s string) (*big.Int, int32, bool) {
	digits, scale := s, int32(0)
	if i := strings.IndexByte(s, '.'); i >= 0 {
		digits, scale = s[:i]+s[i+1:], int32(len(s)-i-1)
	}
	if strings.IndexFunc(digits, func(r rune) bool { return '0' <= r && r <= '9' }) < 0 {
		return nil, 0, false
	}
	d, ok := new(big.Int).SetString(digits, 10)
	return d, scale, ok
}

// roundUp is d×10^-scale at scale to, rounded away from zero.
func roundUp(d *big.Int, scale, to int32) (*big.Int, error) {
	shift := int64(to) - int64(scale)
	switch {
	case shift >= 0:
		if shift > maxQuantityDigits {
			return nil, errQuantityTooLarge
		}
		return d.Mul(d, pow10(shift)), nil
	case -shift > int64(len(d.Text(10))):
		// Every digit lies below the new scale: the result is one unit.
		return big.NewInt(int64(d.Sign())), nil
	}
	q, r := new(big.Int).QuoRem(d, pow10(-shift), new(big.Int))
	if r.Sign() != 0 {
		q.Add(q, big.NewInt(int64(d.Sign())))
	}
	return q, nil
}

func pow10(n int64) *big.Int { return new(big.Int).Exp(big.NewInt(10), big.NewInt(n), nil) }

func (q *quantity) sign() int {
	if q.dec != nil {
		return q.dec.Sign()
	}
	switch {
	case q.value > 0:
		return 1
	case q.value < 0:
		return -1
	}
	return 0
}

// asDec is the value in the arbitrary-precision form.
func (q *quantity) asDec() (*big.Int, int32) {
	if q.dec != nil {
		return q.dec, q.decScale
	}
	return big.NewInt(q.value), -q.scale
}

// cmp is -1, 0 or 1 as q is less than, equal to or greater than o.
func (q *quantity) cmp(o *quantity) int {
	if q.dec == nil && o.dec == nil && q.scale == o.scale {
		switch {
		case q.value < o.value:
			return -1
		case q.value > o.value:
			return 1
		}
		return 0
	}
	a, as := q.asDec()
	b, bs := o.asDec()
	return decCmp(a, as, b, bs)
}

// decCmp compares a×10^-as with b×10^-bs exactly, without expanding a
// scale difference larger than the numbers' own digits.
func decCmp(a *big.Int, as int32, b *big.Int, bs int32) int {
	if a.Sign() != b.Sign() || a.Sign() == 0 {
		return cmp.Compare(a.Sign(), b.Sign())
	}
	// Orders of magnitude: digits left of the point.
	ma := int64(len(new(big.Int).Abs(a).Text(10))) - int64(as)
	mb := int64(len(new(big.Int).Abs(b).Text(10))) - int64(bs)
	if ma != mb {
		if ma > mb {
			return a.Sign()
		}
		return -a.Sign()
	}
	// Same magnitude: the scales differ by at most the digits' lengths.
	if as < bs {
		a = new(big.Int).Mul(a, pow10(int64(bs)-int64(as)))
	} else {
		b = new(big.Int).Mul(b, pow10(int64(as)-int64(bs)))
	}
	return a.Cmp(b)
}

// asInt64 is kube's Quantity.AsInt64: only the int64 form converts.
func (q *quantity) asInt64() (int64, bool) {
	switch {
	case q.dec != nil || q.scale < 0:
		return 0, false
	case q.scale == 0:
		return q.value, true
	}
	return positiveScale(q.value, q.scale)
}

// approximateFloat is kube's AsApproximateFloat64: the digits as a float
// times a power of ten, ±Inf beyond float64's range.
func (q *quantity) approximateFloat() float64 {
	var base float64
	var exponent int
	if q.dec != nil {
		base, _ = big.NewFloat(0).SetInt(q.dec).Float64()
		exponent = -int(q.decScale)
	} else {
		base, exponent = float64(q.value), int(q.scale)
	}
	if exponent == 0 {
		return base
	}
	return base * math.Pow10(exponent)
}

// plus is kube's Quantity.Add (Sub when minus) on a copy of q: in int64s
// while they hold the result, else in arbitrary precision.
func (q *quantity) plus(o *quantity, minus bool) ref.Val {
	if q.dec == nil && o.dec == nil {
		v := o.value
		if minus {
			v = -v // kube's Sub negates too, MinInt64 staying itself
		}
		if r, ok := addInt64Amounts(*q, quantity{value: v, scale: o.scale}); ok {
			return quantityVal{q: &r, computed: true}
		}
	}
	a, as := q.asDec()
	b, bs := o.asDec()
	// inf.Dec aligns both to the finer scale.
	s := max(as, bs)
	if int64(s)-int64(min(as, bs)) > maxQuantityDigits {
		return types.WrapErr(errQuantityTooLarge)
	}
	a = new(big.Int).Mul(a, pow10(int64(s)-int64(as)))
	b = new(big.Int).Mul(b, pow10(int64(s)-int64(bs)))
	if minus {
		a.Sub(a, b)
	} else {
		a.Add(a, b)
	}
	return quantityVal{q: &quantity{dec: a, decScale: s}, computed: true}
}

// addInt64Amounts is kube's int64Amount.Add, its scale arithmetic in 32
// bits as kube's.
func addInt64Amounts(a, b quantity) (quantity, bool) {
	switch {
	case b.value == 0:
		return a, true
	case a.value == 0:
		return b, true
	case a.scale == b.scale:
		c, ok := int64Add(a.value, b.value)
		return quantity{value: c, scale: a.scale}, ok
	case a.scale > b.scale:
		c, ok := positiveScale(a.value, a.scale-b.scale)
		if !ok {
			return a, false
		}
		c, ok = int64Add(c, b.value)
		return quantity{value: c, scale: b.scale}, ok
	}
	c, ok := positiveScale(b.value, b.scale-a.scale)
	if !ok {
		return a, false
	}
	c, ok = int64Add(a.value, c)
	return quantity{value: c, scale: a.scale}, ok
}

func int64Add(a, b int64) (int64, bool) {
	c := a + b
	if (a > 0 && b > 0 && c < 0) || (a < 0 && b < 0 && c >= 0) {
		return 0, false
	}
	return c, true
}

func int64Multiply(a, b int64) (int64, bool) {
	if a == 0 || b == 0 || a == 1 || b == 1 {
		return a * b, true
	}
	if a == math.MinInt64 || b == math.MinInt64 {
		return 0, false
	}
	c := a * b
	return c, c/b == a
}

// positiveScale is base×10^scale if an int64 holds it; a negative scale
// (kube's 32-bit difference wrapped) leaves base as it is, as kube's loop.
func positiveScale(base int64, scale int32) (int64, bool) {
	for i := int32(0); i < scale && base != 0; i++ {
		var ok bool
		if base, ok = int64Multiply(base, 10); !ok {
			return 0, false
		}
	}
	return base, true
}
