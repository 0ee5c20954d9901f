package plugins

import (
	"context"
	"fmt"
	"maps"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/quantity"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// RuntimeClasses is the resource the RuntimeClass plugin reads.
var RuntimeClasses = Ref{Group: "node.k8s.io", Version: "v1", Plural: "runtimeclasses"}

// runtimeClass is kube's RuntimeClass plugin: a new pod naming a
// RuntimeClass, which must exist, gets its overhead and its scheduling
// (nodeSelector, tolerations merged); a pod's own overhead must be the
// class's.
type runtimeClass struct{ src Source }

func (p *runtimeClass) admit(ctx context.Context, a *webhook.Attributes) error {
	spec, rc, err := p.class(ctx, a)
	if rc == nil || err != nil {
		return err
	}
	if overhead, ok := rc["overhead"].(map[string]any); ok {
		podFixed, _ := overhead["podFixed"].(map[string]any)
		if own, _ := spec["overhead"].(map[string]any); len(own) > 0 && !sameResources(podFixed, own) {
			return forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
		if podFixed == nil {
			delete(spec, "overhead")
		} else {
			spec["overhead"] = maps.Clone(podFixed)
		}
	}
	scheduling, ok := rc["scheduling"].(map[string]any)
	if !ok {
		return nil
	}
	if classSelector, _ := scheduling["nodeSelector"].(map[string]any); classSelector != nil {
		selector, _ := spec["nodeSelector"].(map[string]any)
		if selector == nil {
			selector = map[string]any{}
		}
		for k, v := range classSelector {
			if own, ok := selector[k]; ok && own != v {
				return forbidden(a, fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %v; pod.spec.nodeSelector[%s] = %v", k, v, k, own))
			}
			selector[k] = v
		}
		spec["nodeSelector"] = selector
	}
	merged, err := mergeTolerations(ctx, objects(spec, "tolerations"), objects(scheduling, "tolerations"))
	if merged != nil {
		spec["tolerations"] = merged
	}
	return err
}

func (p *runtimeClass) validate(ctx context.Context, a *webhook.Attributes) error {
	spec, rc, err := p.class(ctx, a)
	if spec == nil || err != nil {
		return err
	}
	if overhead, ok := rc["overhead"].(map[string]any); ok {
		podFixed, _ := overhead["podFixed"].(map[string]any)
		if own, _ := spec["overhead"].(map[string]any); !sameResources(podFixed, own) {
			return forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
	} else if spec["overhead"] != nil {
		return forbidden(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// class returns the spec of the pod a creates and the RuntimeClass it
// names (nil if none); one missing refuses the pod.
func (p *runtimeClass) class(ctx context.Context, a *webhook.Attributes) (map[string]any, api.Object, error) {
	spec := podSpec(a)
	if spec == nil || a.Operation != webhook.Create {
		return nil, nil, nil
	}
	name, ok := spec["runtimeClassName"].(string)
	if !ok {
		return spec, nil, nil
	}
	rc, err := p.src.Get(ctx, RuntimeClasses, "", name)
	if err == nil && rc == nil {
		err = forbidden(a, fmt.Sprintf("pod rejected: RuntimeClass %q not found", name))
	}
	return spec, rc, err
}

// sameResources says whether two resource lists hold equal quantities of
// the same resources (none and empty being the same), as kube's semantic
// equality.
func sameResources(x, y map[string]any) bool {
	if len(x) != len(y) {
		return false
	}
	for k, v := range x {
		w, ok := y[k]
		if !ok {
			return false
		}
		if c, err := quantity.Compare(fmt.Sprint(v), fmt.Sprint(w)); err != nil || c != 0 {
			return false
		}
	}
	return true
}

// toleration is a toleration's fields, read once: merging compares every
// pair.
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
// class's. Like kube's it compares every pair: a pod with n tolerations
// costs n² comparisons (10,000 take 2 s on a loaded 2-core machine); it
// stops when ctx ends.
func mergeTolerations(ctx context.Context, first, second []map[string]any) ([]any, error) {
	all := make([]toleration, 0, len(first)+len(second))
	for _, m := range append(first, second...) {
		all = append(all, readToleration(m))
	}
	var kept []*toleration
next:
	for i := range all {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		t := &all[i]
		for _, k := range kept {
			if k.toleratesAll(t) {
				continue next
			}
		}
		for j := i + 1; j < len(all); j++ {
			if later := &all[j]; !later.same(t) && later.toleratesAll(t) {
				continue next
			}
		}
		kept = append(kept, t)
	}
	var merged []any
	for _, t := range kept {
		merged = append(merged, maps.Clone(t.raw))
	}
	return merged, nil
}

// same compares two tolerations field by field.
func (ss *toleration) same(t *toleration) bool {
	return ss.key == t.key && ss.operator == t.operator && ss.value == t.value && ss.effect == t.effect &&
		ss.hasSeconds == t.hasSeconds && ss.seconds == t.seconds
}

// toleratesAll says whether toleration ss tolerates all t does (kube's
// isSuperset).
func (ss *toleration) toleratesAll(t *toleration) bool {
	if ss.same(t) {
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
