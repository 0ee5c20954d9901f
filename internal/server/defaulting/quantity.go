package defaulting

import (
	"encoding/json"
	"math"
	"math/big"
	"strconv"
	"strings"
)

// resourceList is SetDefaults_ResourceList: each quantity finer than a
// milli-unit is rounded up (away from zero) to one, and is then written as
// kube's resource.Quantity writes a value it computed, in canonical form. A
// value it leaves alone keeps its text (its canonical form, when kube's is
// another, is the encoder's business, not defaulting's).
var resourceList = &node{set: func(m map[string]any) {
	for k, v := range m {
		if s, ok := roundUpMilli(v); ok {
			m[k] = s
		}
	}
}}

// resources is a ResourceRequirements: its limits and requests.
var resources = &node{fields: []field{val("limits", resourceList), val("requests", resourceList)}}

var (
	decimalSuffix = map[int]string{-9: "n", -6: "u", -3: "m", 0: "", 3: "k", 6: "M", 9: "G", 12: "T", 15: "P", 18: "E"}
	decimalPower  = map[string]int{"": 0, "n": -9, "u": -6, "m": -3, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
	binaryPower   = map[string]int{"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
	binarySuffix  = []string{"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"}
	bigTen        = big.NewInt(10)
	maxInt64      = big.NewInt(math.MaxInt64)
	big1024       = big.NewInt(1024)
)

// roundUpMilli returns the text kube encodes for the quantity v (a JSON
// string or number) rounded up to a milli-unit, and ok when rounding changed
// it; a quantity kube cannot parse is left to validation.
func roundUpMilli(v any) (string, bool) {
	var text string
	switch v := v.(type) {
	case string:
		text = v
	case json.Number:
		text = string(v)
	default:
		return "", false
	}
	negative, text, shift, scale, format, ok := parseQuantity(strings.TrimSpace(text))
	if !ok || scale <= 3 { // most quantities: no big numbers
		return "", false
	}
	digits, _ := new(big.Int).SetString("0"+text, 10)
	if digits.Lsh(digits, shift).Sign() == 0 {
		return "", false
	}
	if format == "binary" && digits.Cmp(new(big.Int).Mul(maxInt64, pow10(scale))) > 0 {
		return "", false // kube caps a binary quantity at 2^63-1, a whole number
	}
	// digits × 10^-scale, scale > 3: round up to scale 3. A scale past the
	// digits (an exponent as low as -2^31) leaves a quotient of 0.
	q, r := new(big.Int), digits
	if drop := scale - 3; drop <= len(digits.String()) {
		q, r = q.QuoRem(digits, pow10(drop), new(big.Int))
	}
	if r.Sign() == 0 {
		return "", false
	}
	milli := q.Add(q, big.NewInt(1))
	sign := ""
	if negative {
		sign = "-"
	}
	if format == "binary" {
		// A binary quantity stays binary when it is a whole number of at
		// least 1024 (in magnitude), in powers of 1024.
		whole, frac := new(big.Int).QuoRem(milli, big.NewInt(1000), new(big.Int))
		if frac.Sign() == 0 && whole.Cmp(big1024) >= 0 {
			n, times := removeFactors(whole, big1024)
			return sign + n.String() + binarySuffix[times], true
		}
		format = "decimal"
	}
	n, times := removeFactors(milli, bigTen)
	exp := times - 3
	for exp%3 != 0 {
		n.Mul(n, bigTen)
		exp--
	}
	suffix := decimalSuffix[exp] // none past E: kube writes no suffix either
	if format == "exponent" && exp != 0 {
		suffix = "e" + strconv.Itoa(exp)
	} else if format == "exponent" {
		suffix = ""
	}
	return sign + n.String() + suffix, true
}

// parseQuantity reads a quantity as kube's ParseQuantity does: an optional
// sign, digits, an optional fraction, and a decimal suffix (n u m k M G T P
// E), a binary one (Ki ... Ei) or an exponent (e or E and an integer). Its
// magnitude is digits × 2^shift × 10^-scale; format is "decimal", "binary"
// or "exponent".
func parseQuantity(s string) (negative bool, digits string, shift uint, scale int, format string, ok bool) {
	if s == "" {
		return false, "", 0, 0, "", false
	}
	switch s[0] {
	case '-':
		negative, s = true, s[1:]
	case '+':
		s = s[1:]
	}
	num := s[:digitRun(s)]
	s = s[len(num):]
	var frac string
	if strings.HasPrefix(s, ".") {
		frac = s[1 : 1+digitRun(s[1:])]
		s = s[1+len(frac):]
	}
	scale = len(frac)
	if p, binary := binaryPower[s]; binary {
		return negative, num + frac, uint(p), scale, "binary", true
	}
	if e, decimal := decimalPower[s]; decimal {
		return negative, num + frac, 0, scale - e, "decimal", true
	}
	if len(s) < 2 || s[0] != 'e' && s[0] != 'E' {
		return false, "", 0, 0, "", false
	}
	e, err := strconv.ParseInt(s[1:], 10, 64)
	if err != nil {
		return false, "", 0, 0, "", false
	}
	// kube keeps the exponent's low 32 bits.
	return negative, num + frac, 0, scale - int(int32(e)), "exponent", true
}

func digitRun(s string) int {
	i := 0
	for i < len(s) && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	return i
}

// removeFactors divides n by base while it divides, as kube's
// removeInt64Factors, returning the quotient and how many times.
func removeFactors(n, base *big.Int) (*big.Int, int) {
	n = new(big.Int).Set(n)
	times := 0
	for r := new(big.Int); n.Cmp(base) >= 0; times++ {
		q, _ := new(big.Int).QuoRem(n, base, r)
		if r.Sign() != 0 {
			break
		}
		n = q
	}
	return n, times
}

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// QuantityValue is the exact value of a quantity as kube's ParseQuantity
// reads it, for comparisons (kube's Quantity.Cmp); ok is false when s is
// not one.
func QuantityValue(s string) (v *big.Rat, ok bool) {
	negative, digits, shift, scale, _, ok := parseQuantity(s)
	if !ok || digits == "" {
		return nil, false
	}
	n, _ := new(big.Int).SetString(digits, 10)
	n.Lsh(n, shift)
	if negative {
		n.Neg(n)
	}
	v = new(big.Rat).SetInt(n)
	if scale > 0 {
		return v.Quo(v, new(big.Rat).SetInt(pow10(scale))), true
	}
	return v.Mul(v, new(big.Rat).SetInt(pow10(-scale))), true
}
