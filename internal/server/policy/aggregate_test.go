package policy

import (
	"fmt"
	"log/slog"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// TestAggregatorUnion follows kube's syncClusterRole: selector by
// selector, the matching roles by name (the role itself aside), each rule
// once, equal meaning equal as kube's semantic equality (an empty list is
// no list).
func TestAggregatorUnion(t *testing.T) {
	a := NewAggregator(nil, nil, slog.New(slog.DiscardHandler))
	for _, s := range []string{
		`{"metadata":{"name":"agg","labels":{"x":"1"}},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"y":"1"}},{"matchLabels":{"x":"1"}}]},"rules":[{"verbs":["own"]}]}`,
		`{"metadata":{"name":"b","labels":{"x":"1"}},"rules":[{"verbs":["get"],"apiGroups":[""],"resources":["pods"]},{"verbs":["a\u0000b"]}]}`,
		`{"metadata":{"name":"a","labels":{"x":"1","y":"1"}},"rules":[{"verbs":["list"]},{"verbs":["get"],"apiGroups":[""],"resources":["pods"],"resourceNames":[]}]}`,
		`{"metadata":{"name":"c","labels":{"y":"1"}},"rules":[{"verbs":["a","b"]}]}`,
		`{"metadata":{"name":"d","labels":{"z":"1"}},"rules":[{"verbs":["delete"]}]}`,
	} {
		obj, err := api.ParseObject([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		a.put(obj)
	}
	got := a.union("agg", a.view["agg"].selectors, []string{"a", "agg", "b", "c", "d"})
	want := []authz.Rule{
		{Verbs: []string{"list"}}, // y: a, c
		{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{}},
		{Verbs: []string{"a", "b"}},
		{Verbs: []string{"a\x00b"}}, // x: a (seen), b
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// BenchmarkAggregatorUnion is the union of 200 matched roles of 50 rules
// each (10,000 rules, every one different): linear in the rules.
func BenchmarkAggregatorUnion(b *testing.B) {
	a := NewAggregator(nil, nil, slog.New(slog.DiscardHandler))
	names := []string{"agg"}
	agg, _ := api.ParseObject([]byte(`{"metadata":{"name":"agg"},"aggregationRule":{"clusterRoleSelectors":[{"matchLabels":{"x":"1"}}]}}`))
	a.put(agg)
	for i := range 200 {
		rules := make([]any, 50)
		for j := range rules {
			rules[j] = map[string]any{"verbs": []any{"get"}, "resources": []any{fmt.Sprintf("r%d-%d", i, j)}, "apiGroups": []any{""}}
		}
		name := fmt.Sprintf("part%03d", i)
		a.put(api.Object{"metadata": map[string]any{"name": name, "labels": map[string]any{"x": "1"}}, "rules": rules})
		names = append(names, name)
	}
	sels := a.view["agg"].selectors
	b.ReportAllocs()
	for b.Loop() {
		if n := len(a.union("agg", sels, names)); n != 10000 {
			b.Fatalf("%d rules", n)
		}
	}
}
