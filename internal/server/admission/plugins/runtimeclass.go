package plugins

import (
	"context"
	"fmt"
	"maps"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/cellib"
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
	if merged := mergeTolerations(objects(spec, "tolerations"), objects(scheduling, "tolerations")); merged != nil {
		spec["tolerations"] = merged
	}
	return nil
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
		if c, err := cellib.CompareQuantities(fmt.Sprint(v), fmt.Sprint(w)); err != nil || c != 0 {
			return false
		}
	}
	return true
}

// mergeTolerations is kube's MergeTolerations: first's and second's
// tolerations in order, less those another tolerates already (an earlier
// one kept, or a later one unless equal); copies, as second's are the
// class's.
func mergeTolerations(first, second []map[string]any) []any {
	all := append(first, second...)
	var merged []any
next:
	for i, t := range all {
		for _, m := range merged {
			if toleratesAll(m.(map[string]any), t) {
				continue next
			}
		}
		for _, later := range all[i+1:] {
			if !sameToleration(t, later) && toleratesAll(later, t) {
				continue next
			}
		}
		merged = append(merged, maps.Clone(t))
	}
	return merged
}

// sameToleration compares two tolerations field by field.
func sameToleration(x, y map[string]any) bool {
	for _, f := range []string{"key", "operator", "value", "effect"} {
		if str(x, f) != str(y, f) {
			return false
		}
	}
	xs, xok := integer(x, "tolerationSeconds")
	ys, yok := integer(y, "tolerationSeconds")
	return xok == yok && xs == ys
}

// toleratesAll says whether toleration ss tolerates all t does (kube's
// isSuperset).
func toleratesAll(ss, t map[string]any) bool {
	if sameToleration(ss, t) {
		return true
	}
	if str(t, "key") != str(ss, "key") && (str(ss, "key") != "" || str(ss, "operator") != "Exists") {
		return false
	}
	if str(t, "effect") != str(ss, "effect") && str(ss, "effect") != "" {
		return false
	}
	if str(ss, "effect") == "NoExecute" {
		if limit, ok := integer(ss, "tolerationSeconds"); ok {
			if seconds, ok := integer(t, "tolerationSeconds"); !ok || seconds > limit {
				return false
			}
		}
	}
	switch str(ss, "operator") {
	case "Equal", "":
		return str(t, "operator") == "Equal" && str(t, "value") == str(ss, "value")
	case "Exists":
		return true
	}
	return false
}
