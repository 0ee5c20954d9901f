package plugins

import (
	"context"

	"github.com/listwatch/listwatch/internal/server/admission/webhook"
)

// Nodes are read by PodTopologyLabels and PodResizeValidator.
var Nodes = Ref{Version: "v1", Plural: "nodes"}

// topologyLabels are the node labels PodTopologyLabels copies (its
// defaultConfig in kube-apiserver).
var topologyLabels = []string{"topology.kubernetes.io/zone", "topology.kubernetes.io/region"}

// podTopology is kube's PodTopologyLabels plugin (gate
// PodTopologyLabelsAdmission, beta and on since 1.35): a Binding of a pod
// to a node, or a new pod naming its node, gets the node's zone and
// region labels, overwriting its own; the binding's labels go to the pod.
// A node that does not exist gives none.
type podTopology struct{ src Source }

func (p *podTopology) admit(ctx context.Context, a *webhook.Attributes) error {
	if a.Operation != webhook.Create || a.Resource.Group != "" || a.Resource.Resource != "pods" {
		return nil
	}
	var node string
	switch a.Subresource {
	case "":
		spec, _ := a.Object["spec"].(map[string]any)
		node = str(spec, "nodeName")
	case "binding":
		// kube-scheduler sets only the target's kind and name.
		if target, _ := a.Object["target"].(map[string]any); str(target, "kind") == "Node" {
			node = str(target, "name")
		}
	}
	if node == "" {
		return nil
	}
	n, err := p.src.Get(ctx, Nodes, "", node)
	if n == nil || err != nil {
		return err
	}
	nodeLabels := n.Labels()
	for _, k := range topologyLabels {
		v, ok := nodeLabels[k]
		if !ok {
			continue
		}
		md := a.Object.EnsureMetadata()
		labels, _ := md["labels"].(map[string]any)
		if labels == nil {
			labels = map[string]any{}
			md["labels"] = labels
		}
		labels[k] = v
	}
	return nil
}

func (*podTopology) validate(context.Context, *webhook.Attributes) error { return nil }
