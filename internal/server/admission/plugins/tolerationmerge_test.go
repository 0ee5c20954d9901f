package plugins

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
)

// pairwiseMerge is kube's MergeTolerations as kube writes it, every pair
// compared, on parsed tolerations: the reference mergeTolerations must
// equal.
func pairwiseMerge(first, second []map[string]any) []any {
	var all []toleration
	for _, m := range append(first, second...) {
		all = append(all, readToleration(m))
	}
	var kept []*toleration
next:
	for i := range all {
		t := &all[i]
		for _, k := range kept {
			if k.isSuperset(t) {
				continue next
			}
		}
		for j := i + 1; j < len(all); j++ {
			if later := &all[j]; !later.equal(t) && later.isSuperset(t) {
				continue next
			}
		}
		kept = append(kept, t)
	}
	var merged []any
	for _, t := range kept {
		merged = append(merged, t.raw)
	}
	return merged
}

func (ss *toleration) equal(t *toleration) bool {
	return ss.key == t.key && ss.operator == t.operator && ss.value == t.value && ss.effect == t.effect &&
		ss.hasSeconds == t.hasSeconds && ss.seconds == t.seconds
}

// isSuperset is kube's isSuperset.
func (ss *toleration) isSuperset(t *toleration) bool {
	if ss.equal(t) {
		return true
	}
	if t.key != ss.key && (ss.key != "" || ss.operator != "Exists") {
		return false
	}
	if t.effect != ss.effect && ss.effect != "" {
		return false
	}
	if ss.effect == "NoExecute" && ss.hasSeconds && (!t.hasSeconds || t.seconds > ss.seconds) {
		return false
	}
	switch ss.operator {
	case "Equal", "":
		return t.operator == "Equal" && t.value == ss.value
	case "Exists":
		return true
	}
	return false
}

// randomTolerations are n tolerations from small sets of keys, operators
// (an unknown one too), values, effects and seconds, so that lists hold
// equal ones and ones that tolerate all others do.
func randomTolerations(r *rand.Rand, n int) []map[string]any {
	pick := func(s ...string) string { return s[r.IntN(len(s))] }
	out := make([]map[string]any, n)
	for i := range out {
		m := map[string]any{}
		for field, v := range map[string]string{
			"key": pick("", "a", "b"), "operator": pick("", "Equal", "Exists", "Other"),
			"value": pick("", "x", "y"), "effect": pick("", "NoSchedule", "NoExecute"),
		} {
			if v != "" || r.IntN(2) == 0 {
				m[field] = v
			}
		}
		if s := r.IntN(4); s > 0 {
			m["tolerationSeconds"] = number(int64(s*5 - 5))
		}
		out[i] = m
	}
	return out
}

// TestMergeTolerationsPairwise checks the indexed merge against the
// pairwise one on random lists.
func TestMergeTolerationsPairwise(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 20000 {
		first, second := randomTolerations(r, r.IntN(9)), randomTolerations(r, r.IntN(5))
		got, err := mergeTolerations(context.Background(), first, second)
		if err != nil {
			t.Fatal(err)
		}
		if want := pairwiseMerge(first, second); !reflect.DeepEqual(got, want) {
			t.Fatalf("case %d: merging\n%v\nand\n%v\ngives\n%v\nwant\n%v", i, first, second, got, want)
		}
	}
}

// TestMergeTolerationsMany merges 80,000 tolerations of one key, which kube
// compares pairwise (minutes of a core): each tolerates what the one
// before does for longer, so the last with each effect is kept.
func TestMergeTolerationsMany(t *testing.T) {
	const n = 80_000
	first := make([]map[string]any, n)
	for i := range first {
		first[i] = map[string]any{"key": "k", "operator": "Exists", "effect": []string{"NoExecute", "NoSchedule"}[i%2], "tolerationSeconds": number(int64(i))}
	}
	got, err := mergeTolerations(context.Background(), first, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || fmt.Sprint(got) != fmt.Sprint([]any{first[n-2], first[n-1]}) {
		t.Fatalf("kept %d tolerations: %v", len(got), got[:min(len(got), 4)])
	}
}

func BenchmarkMergeTolerations(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	first := randomTolerations(r, 80_000)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := mergeTolerations(context.Background(), first, nil); err != nil {
			b.Fatal(err)
		}
	}
}
