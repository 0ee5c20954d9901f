package plugins

import (
	"context"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// notReadyTaint is the taint a node has until its controller finds it
// ready.
const notReadyTaint = "node.kubernetes.io/not-ready"

// nodeTaint is kube's TaintNodesByCondition plugin: a new node is tainted
// not-ready (NoSchedule), so that no pod is scheduled to it before the
// node controller finds it ready (here, none ever does).
type nodeTaint struct{}

func (nodeTaint) admit(_ context.Context, a *webhook.Attributes) error {
	if a.Operation != webhook.Create || a.Resource.Group != "" || a.Resource.Resource != "nodes" || a.Subresource != "" {
		return nil
	}
	spec, _ := a.Object["spec"].(map[string]any)
	if spec == nil {
		spec = map[string]any{}
		a.Object["spec"] = spec
	}
	for _, t := range objects(spec, "taints") {
		if str(t, "key") == notReadyTaint && str(t, "effect") == "NoSchedule" {
			return nil
		}
	}
	taints, _ := spec["taints"].([]any)
	spec["taints"] = append(taints, map[string]any{"key": notReadyTaint, "effect": "NoSchedule"})
	return nil
}

func (nodeTaint) validate(context.Context, *webhook.Attributes) error { return nil }
