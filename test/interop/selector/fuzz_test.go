package selector_test

import (
	"strings"
	"testing"
)

// FuzzLabelsEquivalence parses a selector with both implementations and
// matches it against the label set "k1=v1;k2=v2" given as the second input.
func FuzzLabelsEquivalence(f *testing.F) {
	for _, s := range labelCases {
		f.Add(s, "a=b;x=1")
	}
	f.Fuzz(func(t *testing.T, s, set string) {
		_, diffs := compareLabels(s, []map[string]string{nil, parseSet(set)})
		for _, d := range diffs {
			t.Error(d)
		}
	})
}

// FuzzFieldsEquivalence is FuzzLabelsEquivalence for field selectors.
func FuzzFieldsEquivalence(f *testing.F) {
	for _, s := range fieldCases {
		f.Add(s, "a=b;metadata.name=foo")
	}
	f.Fuzz(func(t *testing.T, s, set string) {
		_, diffs := compareFields(s, []map[string]string{nil, parseSet(set)})
		for _, d := range diffs {
			t.Error(d)
		}
	})
}

// parseSet reads "k1=v1;k2=v2" (a part without "=" is a key with value "").
func parseSet(s string) map[string]string {
	m := map[string]string{}
	for kv := range strings.SplitSeq(s, ";") {
		k, v, _ := strings.Cut(kv, "=")
		m[k] = v
	}
	return m
}
