package plugins

import (
	"context"
	"maps"
)

// toleration is a toleration's fields, read once.
type toleration struct {
	key, operator, value, effect string
	seconds                      int64
	hasSeconds                   bool
	raw                          map[string]any
}

func readToleration(m map[string]any) toleration {
	t := toleration{key: str(m, "key"), operator: str(m, "operator"), value: str(m, "value"), effect: str(m, "effect"), raw: m}
	t.seconds, t.hasSeconds = integer(m, "tolerationSeconds")
	return t
}

// mergeTolerations is kube's MergeTolerations: first's and second's
// tolerations in order, less those another tolerates already (an earlier
// one kept, or a later one unless equal); copies, as second's are the
// class's. kube compares every pair, n² comparisons for n tolerations
// (80,000 took two minutes of a core); this finds the same ones through
// an index of the tolerations that may tolerate all another does
// (tolerationIndex), in about n map lookups. It stops when ctx ends.
func mergeTolerations(ctx context.Context, first, second []map[string]any) ([]any, error) {
	all := make([]toleration, 0, len(first)+len(second))
	for _, m := range append(first, second...) {
		all = append(all, readToleration(m))
	}
	// Whether a later one, not equal, tolerates all each one does.
	coveredLater := make([]bool, len(all))
	later := tolerationIndex{}
	for i := len(all) - 1; i >= 0; i-- {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		coveredLater[i] = later.covers(&all[i], true)
		later.add(&all[i])
	}
	kept := tolerationIndex{}
	var merged []any
	for i := range all {
		t := &all[i]
		if coveredLater[i] || kept.covers(t, false) {
			continue
		}
		kept.add(t)
		merged = append(merged, maps.Clone(t.raw))
	}
	return merged, nil
}

// kube's isSuperset(ss, t): ss tolerates all t does when the two are
// equal, or else when all of these hold:
//   - ss.key is t.key, or ss is the empty key with Exists (every key);
//   - ss.effect is t.effect, or empty (every effect);
//   - a NoExecute ss with seconds has t's seconds set and no fewer;
//   - ss's operator is Exists, or Equal or empty and t's is Equal with
//     ss's value.
// So the tolerations that may tolerate all t does are in a few groups
// (tolerationGroup) of equal key, operator, effect and, but for Exists,
// value, which tolerationIndex keeps apart.

// groupKey names a group: Exists ignores the value.
type groupKey struct{ key, operator, value, effect string }

func groupOf(t *toleration) groupKey {
	g := groupKey{t.key, t.operator, t.value, t.effect}
	if t.operator == "Exists" {
		g.value = ""
	}
	return g
}

// tolerationIndex is a set of tolerations, grouped.
type tolerationIndex map[groupKey]*tolerationGroup

// tolerationGroup holds tolerations that differ only in value (Exists) and
// seconds: how many of each, how many without seconds, and the two with
// seconds whose seconds are the largest (of two distinct ones).
type tolerationGroup struct {
	noExecute bool // their effect is NoExecute, where seconds count
	count     map[member]int
	n, noSecs int
	top       [2]*member
}

// member is what tells apart the tolerations of a group.
type member struct {
	value      string
	seconds    int64
	hasSeconds bool
}

func memberOf(t *toleration) member { return member{t.value, t.seconds, t.hasSeconds} }

func (ix tolerationIndex) add(t *toleration) {
	g := ix[groupOf(t)]
	if g == nil {
		g = &tolerationGroup{noExecute: t.effect == "NoExecute", count: map[member]int{}}
		ix[groupOf(t)] = g
	}
	m := memberOf(t)
	g.count[m]++
	g.n++
	if !m.hasSeconds {
		g.noSecs++
		return
	}
	if g.count[m] > 1 {
		return // already among the top, or below them
	}
	switch {
	case g.top[0] == nil || m.seconds > g.top[0].seconds:
		g.top[1], g.top[0] = g.top[0], &m
	case g.top[1] == nil || m.seconds > g.top[1].seconds:
		g.top[1] = &m
	}
}

// covers says whether a toleration of the set tolerates all t does
// (isSuperset); with strict, one that is not equal to t.
func (ix tolerationIndex) covers(t *toleration, strict bool) bool {
	own := groupOf(t)
	check := func(k groupKey) bool {
		g := ix[k]
		if g == nil {
			return false
		}
		if k == own {
			return g.coversOwn(t, strict)
		}
		return g.coversOther(t)
	}
	effects := []string{t.effect}
	if t.effect != "" {
		effects = append(effects, "")
	}
	for _, e := range effects {
		if check(groupKey{t.key, "Exists", "", e}) || t.key != "" && check(groupKey{"", "Exists", "", e}) {
			return true
		}
		if t.operator == "Equal" && (check(groupKey{t.key, "Equal", t.value, e}) || check(groupKey{t.key, "", t.value, e})) {
			return true
		}
	}
	// t's own group, if not checked above, tolerates all t does only by
	// equality: an empty or unknown operator.
	if !strict && t.operator != "Exists" && t.operator != "Equal" {
		if g := ix[own]; g != nil {
			return g.count[memberOf(t)] > 0
		}
	}
	return false
}

// coversOther says whether the group, whose tolerations are not t's
// equals and are of a key, operator, value and effect that tolerate all t
// does, has one whose seconds do too.
func (g *tolerationGroup) coversOther(t *toleration) bool {
	if !g.noExecute {
		return g.n > 0
	}
	return g.noSecs > 0 || t.hasSeconds && g.top[0] != nil && g.top[0].seconds >= t.seconds
}

// coversOwn is coversOther for t's own group (of an Exists or Equal t),
// which may hold t's equals: with strict, they do not count.
func (g *tolerationGroup) coversOwn(t *toleration, strict bool) bool {
	if !strict {
		return g.coversOther(t) || g.count[memberOf(t)] > 0
	}
	equal := g.count[memberOf(t)]
	if !g.noExecute {
		return g.n > equal
	}
	if !t.hasSeconds {
		return g.noSecs > equal // t's equals are among those without seconds
	}
	if g.noSecs > 0 {
		return true
	}
	// One with seconds no fewer than t's, other than t: the first of the
	// top two that is not t's member.
	m := memberOf(t)
	for _, top := range g.top {
		if top != nil && *top != m {
			return top.seconds >= t.seconds
		}
	}
	return false
}
