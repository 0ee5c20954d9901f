// Package selector_test proves listwatch's selector package against
// apimachinery's labels.Parse, fields.ParseSelector and
// metav1.LabelSelectorAsSelector: the same inputs are accepted, and accepted
// selectors print and match the same.
package selector_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/listwatch/listwatch/client/selector"
)

// generated is how many selectors of each generator the equivalence tests try.
const generated = 50_000

// Hand-picked edge cases, tried on top of the generated ones.
var (
	labelCases = []string{
		"", " ", "\t\n\r ", ",", "a", "!a", "! a", "!!a", "a,", ",a", "a,,b", "a=", "a==", "a!=", "a===b",
		"a=b=c", "a in ()", "a in (,)", "a in (b,)", "a in (,b)", "a in (b,,c)", "a in (b c)", "a in (b",
		"a in b", "ain (b)", "a notin(b)", "in in (in)", "notin notin (notin)", "in=in", "a=in", "!in",
		"a>1", "a<1", "a>-1", "a>", "a>b", "a>01", "a>9223372036854775808", "a>=1", "!a=b", "!a in (b)",
		"x in (foo,,baz),y,z notin ()", "a=b\x00junk", "a=b \x00junk", "a\x00b", "a=\x00b", "\x00",
		"a=b\x00\x00c", "a\v=b", "a=b\f", "a=é", "é", "a/b=c", "A/b=c", "a./b", ".a/b", "a/-b",
		strings.Repeat("k,", 20) + "k", "b=1,a=2,b!=3,a in (x),c,!d",
		// apimachinery's own TestSelectorParse inputs
		"x=a,y=b,z=c", "x!=a,y=b", "x= ", "x=,z= ", "x= ,z= ", "x>1,z<5", "x=a||y=b", "x==a==b", "!x=a", "x<a",
	}
	fieldCases = []string{
		"", ",", ",,", "=", "==", "!=", "a", "a=", "a==", "a!=", "=b", "!=b", "a=b=c", "a=b\\=c", "a=b\\,c,d=e",
		"a=\\", "a=\\\\", "a=\\!", "a!b=c", "a!!=b", "a=!b", " a = b ", "a\\,b=c", "a\\=b", "a\\\\,b=c",
		"a=\xff\\,", "a=\xff", "a=é\\,", "metadata.name=foo,metadata.namespace!=bar", "b=1,a=2", "a==c,a=b",
	}
)

func TestLabelsEquivalence(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	inputs := labelCases
	for range generated {
		inputs = append(inputs, genLabelSelector(r), genSoup(r))
	}
	check(t, inputs, func(s string) (bool, []string) { return compareLabels(s, genLabelSets(r)) })
}

func TestFieldsEquivalence(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	inputs := fieldCases
	for range generated {
		inputs = append(inputs, genFieldSelector(r))
	}
	check(t, inputs, func(s string) (bool, []string) { return compareFields(s, genFieldSets(r)) })
}

func TestLabelSelectorEquivalence(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	inputs := []*selector.LabelSelector{nil, {}, {MatchLabels: map[string]string{}}}
	for range generated / 10 {
		inputs = append(inputs, genStructured(r))
	}
	check(t, inputs, func(ls *selector.LabelSelector) (bool, []string) {
		return compareStructured(ls, genLabelSets(r))
	})
}

// check compares every input, reporting up to 20 differences, and requires
// accepted and rejected inputs each to be at least a tenth, so that a broken
// generator cannot pass unnoticed.
func check[T any](t *testing.T, inputs []T, compare func(T) (bool, []string)) {
	t.Helper()
	accepted, failures := 0, 0
	for _, in := range inputs {
		ok, diffs := compare(in)
		if ok {
			accepted++
		}
		for _, d := range diffs {
			t.Error(d)
			if failures++; failures == 20 {
				t.Fatal("too many differences")
			}
		}
	}
	t.Logf("apimachinery accepted %d of %d inputs", accepted, len(inputs))
	if n := len(inputs); accepted < n/10 || n-accepted < n/10 {
		t.Errorf("generator accepted %d of %d inputs; want at least a tenth accepted and a tenth rejected", accepted, n)
	}
}

var (
	structuredOps = []selector.LabelSelectorOperator{
		selector.LabelSelectorOpIn, selector.LabelSelectorOpNotIn,
		selector.LabelSelectorOpExists, selector.LabelSelectorOpDoesNotExist,
	}
	badStructuredOps = []selector.LabelSelectorOperator{"in", "Equals", ""}
	goodKeys         = []string{"a", "app", "tier", "env", "example.com/app", "in"}
	goodValues       = []string{"", "b", "prod", "web", "1"}
)

// genStructured returns a structured selector of at most 12 requirements
// (beyond that Kubernetes' String order depends on map iteration), usually
// valid: one time in eight a key, value, operator or value count is not.
func genStructured(r *rand.Rand) *selector.LabelSelector {
	ls := &selector.LabelSelector{}
	if n := r.IntN(4); n > 0 {
		ls.MatchLabels = map[string]string{}
		for range n {
			ls.MatchLabels[maybeBad(r, goodKeys, labelKeys)] = maybeBad(r, goodValues, labelValues)
		}
	}
	for range r.IntN(5) {
		e := selector.LabelSelectorRequirement{Key: maybeBad(r, goodKeys, labelKeys), Operator: maybeBad(r, structuredOps, badStructuredOps)}
		n := 0
		if e.Operator == selector.LabelSelectorOpIn || e.Operator == selector.LabelSelectorOpNotIn {
			n = 1 + r.IntN(3)
		}
		if r.IntN(8) == 0 {
			n = r.IntN(3)
		}
		for range n {
			e.Values = append(e.Values, maybeBad(r, goodValues, labelValues))
		}
		ls.MatchExpressions = append(ls.MatchExpressions, e)
	}
	return ls
}

// maybeBad picks from good, or one time in 32 from any.
func maybeBad[T any](r *rand.Rand, good, any []T) T {
	if r.IntN(32) == 0 {
		return pick(r, any)
	}
	return pick(r, good)
}

// TestValidateLabelEquivalence checks ValidateLabelKey and ValidateLabel,
// which the server applies to metadata.labels, against apimachinery's
// validation of label keys and values.
func TestValidateLabelEquivalence(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(7, 8))
	type kv struct{ k, v string }
	var inputs []kv
	for _, k := range labelKeys {
		for _, v := range labelValues {
			inputs = append(inputs, kv{k, v})
		}
	}
	maybeMutate := func(s string) string {
		if r.IntN(4) == 0 {
			return mutate(r, s)
		}
		return s
	}
	for range generated {
		inputs = append(inputs, kv{maybeMutate(pick(r, labelKeys)), maybeMutate(pick(r, labelValues))})
	}
	check(t, inputs, func(in kv) (bool, []string) {
		keyOK := len(validation.IsQualifiedName(in.k)) == 0
		ok := keyOK && len(validation.IsValidLabelValue(in.v)) == 0
		var diffs []string
		if err := selector.ValidateLabelKey(in.k); (err == nil) != keyOK {
			diffs = append(diffs, fmt.Sprintf("ValidateLabelKey(%q) = %v, want ok = %v", in.k, err, keyOK))
		}
		if err := selector.ValidateLabel(in.k, in.v); (err == nil) != ok {
			diffs = append(diffs, fmt.Sprintf("ValidateLabel(%q, %q) = %v, want ok = %v", in.k, in.v, err, ok))
		}
		return ok, diffs
	})
}
