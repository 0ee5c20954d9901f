package quantity

import (
	"errors"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TestParseBound parses texts at the bound and past it: within, the value
// is apimachinery's; past it, ErrTooLarge comes before any parsing.
func TestParseBound(t *testing.T) {
	for _, tt := range []struct {
		text string
		want error
	}{
		{"1.5Gi", nil},
		{"1e4090", nil}, // 6 characters + 4090 places = MaxSpan
		{"1e4091", ErrTooLarge},
		{"1e-4089", nil},
		{"1e-4090", ErrTooLarge},
		{"1e2147483647", ErrTooLarge},
		{"1e-2147483648", ErrTooLarge},
		{"1234567890123456789e2147483647", ErrTooLarge},
		{"1e4294967296", nil},                          // kube keeps the exponent's low 32 bits: 0
		{"1e99999999999999999999", resource.ErrSuffix}, // an exponent past int64: kube's error
		{"1E", nil},                                    // the exa suffix
		{"200K", resource.ErrSuffix},
	} {
		start := time.Now()
		q, err := Parse(tt.text)
		if !errors.Is(err, tt.want) {
			t.Errorf("Parse(%q) = %v, %v; want error %v", tt.text, q.String(), err, tt.want)
		}
		if err == nil {
			want, kerr := resource.ParseQuantity(tt.text)
			if kerr != nil || q.Cmp(want) != 0 {
				t.Errorf("Parse(%q) = %v, apimachinery's %v %v", tt.text, q.String(), want.String(), kerr)
			}
		}
		if took := time.Since(start); took > time.Second {
			t.Errorf("Parse(%q) took %v", tt.text, took)
		}
	}
}

// TestCompareWithinTheBound compares values far apart in scale, each
// within the bound, as apimachinery does and at once.
func TestCompareWithinTheBound(t *testing.T) {
	for _, tt := range []struct {
		a, b string
		want int
	}{
		{"1", "1000m", 0},
		{"1Ki", "1k", 1},
		{"1e4000", "1.5Gi", 1},
		{"1e-4000", "1n", 0}, // rounded up to nano
		{"-1e4000", "1e-4000", -1},
	} {
		got, err := Compare(tt.a, tt.b)
		if err != nil || got != tt.want {
			t.Errorf("Compare(%q, %q) = %d, %v; want %d", tt.a, tt.b, got, err, tt.want)
		}
	}
	if _, err := Compare("1", "1e5000"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("Compare past the bound: %v, want ErrTooLarge", err)
	}
}
