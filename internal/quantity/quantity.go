// Package quantity reads Kubernetes resource quantities ("1.5Gi", "200m")
// with k8s.io/apimachinery's parser, after refusing any text whose value
// spans more than MaxSpan decimal places. kube's parser expands a value
// to nano precision and its arithmetic aligns scales digit by digit, so a
// short text with a large exponent ("1e-2147483648", or "1e2147483647"
// compared with "1.5Gi") takes it minutes and gigabytes; within the bound
// every parse, comparison and sum is small.
package quantity

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
)

// MaxSpan bounds the decimal places a quantity's text may span: its
// length plus the magnitude of its exponent. Real quantities span tens.
const MaxSpan = 4096

// ErrTooLarge refuses a quantity spanning more than MaxSpan places.
var ErrTooLarge = errors.New("quantity exceeds the supported precision")

// Parse is resource.ParseQuantity of text, or ErrTooLarge when text spans
// more than MaxSpan places.
func Parse(text string) (resource.Quantity, error) {
	if span(text) > MaxSpan {
		return resource.Quantity{}, ErrTooLarge
	}
	return resource.ParseQuantity(text)
}

// Compare compares two quantities' values as resource.Quantity's Cmp: -1,
// 0 or 1 as a is less than, equal to or greater than b.
func Compare(a, b string) (int, error) {
	qa, err := Parse(a)
	if err != nil {
		return 0, err
	}
	qb, err := Parse(b)
	if err != nil {
		return 0, err
	}
	return qa.Cmp(qb), nil
}

// span is how many decimal places s spans at most: its length, plus the
// magnitude of its exponent when it has one ("1e-9"), which kube reads as
// an int64 and keeps the low 32 bits of.
func span(s string) int {
	i := strings.IndexAny(s, "eE")
	if i < 0 {
		return len(s)
	}
	n, err := strconv.ParseInt(s[i+1:], 10, 64)
	if err != nil { // a suffix (E, Ei), or an exponent kube refuses
		return len(s)
	}
	return len(s) + int(math.Abs(float64(int32(n))))
}
