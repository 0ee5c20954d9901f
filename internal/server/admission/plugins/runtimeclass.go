package plugins

import (
	"context"
	"fmt"
	"maps"

	"github.com/listwatch/listwatch/client/api"
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
			return Forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
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
				return Forbidden(a, fmt.Sprintf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %v; pod.spec.nodeSelector[%s] = %v", k, v, k, own))
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
			return Forbidden(a, "pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")
		}
	} else if spec["overhead"] != nil {
		return Forbidden(a, "pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
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
		err = Forbidden(a, fmt.Sprintf("pod rejected: RuntimeClass %q not found", name))
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
