package plugins

import (
	"context"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// defaultTolerationSeconds is kube-apiserver's
// --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds.
const defaultTolerationSeconds = 300

// The taints a node gets when it is not ready or unreachable.
var nodeTaints = []string{"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}

// defaultTolerations is kube's DefaultTolerationSeconds plugin: a pod
// that does not tolerate a node's not-ready or unreachable NoExecute taint
// tolerates it for 5 minutes, so that it is evicted only after them.
type defaultTolerations struct{}

func (defaultTolerations) admit(_ context.Context, a *webhook.Attributes) error {
	spec := podSpec(a)
	if spec == nil {
		return nil
	}
	tolerations, _ := spec["tolerations"].([]any)
	for _, taint := range nodeTaints {
		if !tolerates(spec, taint) {
			tolerations = append(tolerations, map[string]any{
				"key": taint, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": number(defaultTolerationSeconds),
			})
		}
	}
	if len(tolerations) > 0 {
		spec["tolerations"] = tolerations
	}
	return nil
}

// tolerates says whether a toleration of the pod matches the NoExecute
// taint of key, as the plugin checks: by key (or none) and effect (or none).
func tolerates(spec map[string]any, key string) bool {
	for _, t := range objects(spec, "tolerations") {
		if k := str(t, "key"); (k == key || k == "") && (str(t, "effect") == "NoExecute" || str(t, "effect") == "") {
			return true
		}
	}
	return false
}

func (defaultTolerations) validate(context.Context, *webhook.Attributes) error { return nil }
