package cellib

import (
	"math"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
)

// evalLib compiles and runs expr with the libraries: its value, or its
// error's text.
func evalLib(t *testing.T, expr string) (any, string) {
	t.Helper()
	env, err := cel.NewEnv(EnvOptions()...)
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("%s: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast, cel.CostTracking(Costs{}))
	if err != nil {
		t.Fatal(err)
	}
	out, _, err := prg.Eval(cel.NoVars())
	if err != nil {
		return nil, err.Error()
	}
	return out.Value(), ""
}

// TestQuantityNetValues checks values and errors from kube's library
// documentation and resource.Quantity's rules.
func TestQuantityNetValues(t *testing.T) {
	tests := []struct {
		expr string
		want any
		err  string
	}{
		{`isQuantity('1.3Gi') && isQuantity('10000k') && !isQuantity('200K') && !isQuantity('1,3G')`, true, ""},
		// No digits read as 0, whatever kube's documentation says of 'Mi'.
		{`sign(quantity('Mi')) == 0 && isQuantity('+') && isQuantity('-.') && isQuantity('1.') && !isQuantity('.e-20') && !isQuantity('1e')`, true, ""},
		{`quantity('50k').asInteger()`, int64(50000), ""},
		{`quantity('50000000G').isInteger()`, true, ""},
		{`quantity('9999999999999999999999999999999999999G').isInteger()`, false, ""},
		{`quantity('9999999999999999999999999999999999999G').asInteger()`, nil, "cannot convert value to integer"},
		{`quantity('50k').sub(20000).asApproximateFloat()`, 30000.0, ""},
		{`quantity('50k').add(20).sub(quantity('100k')).sub(-50000).compareTo(quantity('20'))`, int64(0), ""},
		// An arbitrary-precision value is no integer, whatever it holds.
		{`quantity('1.5Gi').isInteger()`, false, ""},
		{`quantity('9223372036854775807').add(1).isInteger()`, false, ""},
		{`quantity('1e4294967296').asInteger()`, int64(1), ""},
		{`quantity('0.0000000001').compareTo(quantity('1n'))`, int64(0), ""},
		{`quantity('-1e-400').compareTo(quantity('-1n'))`, int64(0), ""},
		{`quantity('8Ei').compareTo(quantity('9223372036854775807'))`, int64(0), ""},
		{`quantity('1e400').asApproximateFloat()`, math.Inf(1), ""},
		{`quantity('1e4000').isGreaterThan(quantity('1e3999')) && quantity('1e-4000').add(quantity('1e4000')).isGreaterThan(quantity('1e4000'))`, true, ""},
		// Past the bound on places, refused before kube's parser runs.
		{`quantity('1e2147483647')`, nil, "quantity exceeds the supported precision"},
		{`isQuantity('1e-2147483648')`, false, ""},
		{`sign(quantity('-1m'))`, int64(-1), ""},
		{`quantity('200K')`, nil, "unable to parse quantity's suffix"},
		{`quantity('1 ')`, nil, "quantities must match the regular expression"},
		{`quantity('1') == quantity('1000m')`, true, ""},
		{`quantity('1').add(0) == quantity('1')`, true, ""},
		{`quantity('1') == quantity('1').add(0)`, nil, "no such overload"},
		{`quantity('1234567890123456789e100000')`, nil, "quantity exceeds the supported precision"},
		{`ip('::1').family() == 6 && ip('1.2.3.4').family() == 4`, true, ""},
		{`ip('::ffff:1.2.3.4')`, nil, `IPv4-mapped IPv6 address "::ffff:1.2.3.4" is not allowed`},
		{`ip('fe80::1%eth0')`, nil, `IP address "fe80::1%eth0" with zone value is not allowed`},
		{`ip('01.2.3.4')`, nil, `IP Address "01.2.3.4" parse error during conversion from string`},
		{`string(ip('2001:DB8::1'))`, "2001:db8::1", ""},
		{`ip.isCanonical('2001:DB8::1')`, false, ""},
		{`ip('169.254.0.1').isLinkLocalUnicast() && ip('ff02::1').isLinkLocalMulticast() && ip('::').isUnspecified() && ip('127.0.0.2').isLoopback() && ip('8.8.8.8').isGlobalUnicast()`, true, ""},
		{`cidr('10.1.2.3/8').containsIP('10.9.9.9') && !cidr('10.0.0.0/8').containsIP('::1')`, true, ""},
		{`cidr('10.0.0.0/8').containsIP('nope')`, nil, "no such overload"},
		{`cidr('10.0.0.0/8').containsCIDR('nope')`, nil, "network address parse error during conversion from string: network address parse error"},
		{`cidr('10.0.0.0/8').containsCIDR('10.1.0.0/16') && !cidr('10.0.0.0/16').containsCIDR('10.0.0.0/8')`, true, ""},
		{`string(cidr('10.1.2.3/8').masked()) + ' ' + string(cidr('10.1.2.3/8').ip()) + ' ' + string(cidr('10.1.2.3/8').prefixLength())`, "10.0.0.0/8 10.1.2.3 8", ""},
		{`cidr('::ffff:1.2.3.4/120')`, nil, `IPv4-mapped IPv6 address "::ffff:1.2.3.4/120" is not allowed`},
	}
	for _, tt := range tests {
		got, err := evalLib(t, tt.expr)
		if tt.err != "" {
			if !strings.Contains(err, tt.err) {
				t.Errorf("%s: error %q, want %q", tt.expr, err, tt.err)
			}
			continue
		}
		if err != "" || got != tt.want {
			t.Errorf("%s = %v (%s), want %v", tt.expr, got, err, tt.want)
		}
	}
}

// TestQuantityNetCosts checks kube's static and runtime costs of calls
// (library/cost.go): string parses a tenth per character, a CIDR's
// comparisons a tenth per byte of its prefix, accessors one.
func TestQuantityNetCosts(t *testing.T) {
	env, err := cel.NewEnv(append(EnvOptions(), cel.Variable("s", cel.StringType))...)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		expr     string
		estimate checker.CostEstimate
		actual   uint64
		s        string
	}{
		// A variable costs 1; 35 characters cost 4 to parse, 7 to parse
		// and print.
		{`isQuantity(s)`, checker.CostEstimate{Min: 1, Max: 101}, 1 + 4, strings.Repeat("1", 35)},
		{`ip.isCanonical(s)`, checker.CostEstimate{Min: 1, Max: 201}, 1 + 7, "2001:db8:0000:0000:0000:0000:0:0001"},
		// Two 11-character parses (2 each); containsCIDR estimated as
		// 4-16 bytes compared twice, once more, plus one; at runtime the
		// 20-bit prefix's 3 bytes: 1 + 1 + 1.
		{`cidr('10.0.0.0/20').containsCIDR(cidr('10.0.0.0/24'))`, checker.CostEstimate{Min: 2 + 2 + 1 + 1 + 1, Max: 2 + 2 + 4 + 2 + 1}, 2 + 2 + 3, ""},
		// Parses of one character, sign, add and ==: 1 each.
		{`sign(quantity('1').add(1)) == sign(quantity('1'))`, checker.CostEstimate{Min: 6, Max: 6}, 6, ""},
	}
	for _, tt := range tests {
		ast, iss := env.Compile(tt.expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		est, err := env.EstimateCost(ast, bound{1000})
		if err != nil {
			t.Fatal(err)
		}
		if est.Min != tt.estimate.Min || est.Max != tt.estimate.Max {
			t.Errorf("%s: estimate %+v, want %+v", tt.expr, est, tt.estimate)
		}
		prg, err := env.Program(ast, cel.CostTracking(Costs{}))
		if err != nil {
			t.Fatal(err)
		}
		_, det, err := prg.Eval(map[string]any{"s": tt.s})
		if err != nil {
			t.Fatal(err)
		}
		if got := *det.ActualCost(); got != tt.actual {
			t.Errorf("%s: actual cost %d, want %d", tt.expr, got, tt.actual)
		}
	}
}

// bound is an estimator bounding every variable to max characters.
type bound struct{ max uint64 }

func (b bound) EstimateSize(n checker.AstNode) *checker.SizeEstimate {
	if len(n.Path()) == 0 {
		return nil
	}
	return &checker.SizeEstimate{Min: 0, Max: b.max}
}

func (b bound) EstimateCallCost(function, overload string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return EstimateCallCost(b, function, overload, target, args)
}
