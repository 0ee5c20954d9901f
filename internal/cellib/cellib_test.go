package cellib

import (
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/ext"
)

func testEnv(t *testing.T) *cel.Env {
	t.Helper()
	env, err := cel.NewEnv(append(EnvOptions(), cel.OptionalTypes(), ext.Strings(ext.StringsVersion(2)),
		cel.Variable("s", cel.StringType), cel.Variable("l", cel.ListType(cel.StringType)))...)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// eval compiles and runs expr with s and l bound, returning its value and
// its runtime cost.
func eval(t *testing.T, expr string, vars map[string]any) (ref.Val, uint64, error) {
	t.Helper()
	if vars == nil {
		vars = map[string]any{"s": "", "l": []string{}}
	}
	return evalIn(t, testEnv(t), expr, vars)
}

// evalIn compiles and runs expr in env, returning its value and its
// runtime cost.
func evalIn(t *testing.T, env *cel.Env, expr string, vars map[string]any) (ref.Val, uint64, error) {
	t.Helper()
	ast, iss := env.Compile(expr)
	if iss.Err() != nil {
		t.Fatalf("%s: %v", expr, iss.Err())
	}
	prg, err := env.Program(ast, cel.CostTracking(Costs{}))
	if err != nil {
		t.Fatalf("%s: %v", expr, err)
	}
	out, det, err := prg.Eval(vars)
	return out, *det.ActualCost(), err
}

func TestFunctions(t *testing.T) {
	for _, expr := range []string{
		`url('https://a.example:8443/p%20q?x=1&x=2').getHost() == 'a.example:8443'`,
		`url('https://[::1]:80/').getHostname() == '::1' && url('https://a/').getPort() == ''`,
		`url('/p%20q').getEscapedPath() == '/p%20q' && url('http://a?x=1&x=2').getQuery() == {'x': ['1', '2']}`,
		`isURL('https://a') && isURL('/a') && !isURL('a') && url('http://a') == url('http://a')`,
		`'ab12cd345'.find('[0-9]+') == '12' && 'ab12cd345'.findAll('[0-9]+') == ['12', '345']`,
		`'ab12cd345'.findAll('[0-9]+', 1) == ['12'] && 'x'.find(s + 'y') == ''`,
		`[1, 2, 2].isSorted() && !['b', 'a'].isSorted() && [1.5, 2.5].sum() == 4.0 && [duration('1s')].sum() == duration('1s')`,
		`[3, 1, 2].min() == 1 && [3, 1, 2].max() == 3 && [b'a', b'b'].max() == b'b' && [1u].sum() == 1u`,
		`[1, 2, 1].indexOf(1) == 0 && [1, 2, 1].lastIndexOf(1) == 2 && [[1]].indexOf([2]) == -1`,
		`format.named('dns1123Label').hasValue() && !format.named('nope').hasValue()`,
		`format.dns1123Label().validate('a.b') == optional.of(['must not contain dots'])`,
		`!format.dns1123LabelPrefix().validate('ab-').hasValue() && format.dns1123Label().validate('ab-').hasValue()`,
		`format.uuid().validate('x').value() == ['does not match the UUID format'] && !format.byte().validate('aGk=').hasValue()`,
		`format.datetime().validate('2020-01-01T10:00:00Z') == optional.none() && format.date().validate('2020-13-01').hasValue()`,
		`format.uri() == format.named('uri').value() && format.labelValue().validate('-').value()[0].startsWith('a valid label')`,
		`semver('1.2.3').major() == 1 && semver('1.2.3').minor() == 2 && semver('1.2.3').patch() == 3`,
		`semver('v1.02', true) == semver('1.2.0') && isSemver('1.0.0-rc.1') && !isSemver('1.0') && isSemver('1.0', true)`,
		`semver('1.10.0').isGreaterThan(semver('1.9.0')) && semver('1.0.0-a').isLessThan(semver('1.0.0')) && semver('1.0.0+x').compareTo(semver('1.0.0')) == 0`,
	} {
		out, _, err := eval(t, expr, nil)
		if err != nil || out != types.True {
			t.Errorf("%s = %v, %v", expr, out, err)
		}
	}
}

func TestErrors(t *testing.T) {
	for expr, want := range map[string]string{
		`url('a b').getHost() == ''`:          "URL parse error during conversion from string: parse \"a b\": invalid URI for request",
		`'x'.find(s) == ''`:                   "Illegal regex: error parsing regexp: missing closing ): `(`",
		`l.max() == ''`:                       "max called on empty list",
		`l.min() == ''`:                       "min called on empty list",
		`[9223372036854775807, 1].sum() == 0`: "integer overflow",
		`semver('1.2').major() == 1`:          "No Major.Minor.Patch elements found",
		`semver('1.2-rc', true).major() == 1`: "short version cannot contain PreRelease/Build meta data",
	} {
		_, _, err := eval(t, expr, map[string]any{"s": "(", "l": []string{}})
		if err == nil || err.Error() != want {
			t.Errorf("%s: error %v, want %q", expr, err, want)
		}
	}
}

// TestCallCost checks the runtime costs of kube's cost.go: a traversal of
// the receiver, rounded up, times the pattern's for regexes.
func TestCallCost(t *testing.T) {
	s := func(n int) ref.Val { return types.String(strings.Repeat("a", n)) }
	list := types.NewStringList(types.DefaultTypeAdapter, []string{strings.Repeat("a", 25), strings.Repeat("a", 9)})
	for _, tt := range []struct {
		function string
		args     []ref.Val
		want     uint64
	}{
		{"find", []ref.Val{s(99), s(8)}, 10 * 2},
		{"findAll", []ref.Val{s(0), s(1)}, 1 * 1},
		{"url", []ref.Val{s(11)}, 2},
		{"semver", []ref.Val{s(5)}, 1},
		{"getHost", nil, 1},
		{"isSorted", []ref.Val{list}, 2 + 0},
		{"validate", []ref.Val{namedFormats["uri"], s(9)}, 1 * 276},
		{"lowerAscii", []ref.Val{s(31)}, 4},
		{"split", []ref.Val{s(31)}, 7},
	} {
		got := Costs{}.CallCost(tt.function, "", tt.args, nil)
		if got == nil || *got != tt.want {
			t.Errorf("%s%v: cost %v, want %d", tt.function, tt.args, got, tt.want)
		}
	}
	if c := (Costs{}).CallCost("size", "", []ref.Val{s(1)}, nil); c != nil {
		t.Errorf("size: cost %d, want cel-go's own", *c)
	}
}

// bounded bounds every variable's size.
type bounded uint64

func (b bounded) EstimateSize(checker.AstNode) *checker.SizeEstimate {
	return &checker.SizeEstimate{Min: 0, Max: uint64(b)}
}

func (b bounded) EstimateCallCost(function, overload string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	return EstimateCallCost(b, function, overload, target, args)
}

// TestEstimateCost checks static costs as kube's estimator computes them
// for variables of at most 1000 bytes or elements.
func TestEstimateCost(t *testing.T) {
	// The library's part first, then what cel-go adds (variables, ==).
	for expr, want := range map[string]uint64{
		`s.find(s) == ''`:                     101*250 + 2,
		`l.isSorted()`:                        1000*(1+100) + 1,
		`s.lowerAscii() == ''`:                100 + 1,
		`isSemver(s)`:                         100 + 1,
		`format.uri().validate(s).hasValue()`: 100*32 + 3,
		`url(s).getHost() == ''`:              100 + 1 + 1,
	} {
		env := testEnv(t)
		ast, iss := env.Compile(expr)
		if iss.Err() != nil {
			t.Fatal(iss.Err())
		}
		est, err := env.EstimateCost(ast, bounded(1000))
		if err != nil {
			t.Fatal(err)
		}
		if est.Max != want {
			t.Errorf("%s: estimated %d, want %d", expr, est.Max, want)
		}
	}
}
