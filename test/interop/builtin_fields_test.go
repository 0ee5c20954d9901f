package interop

import (
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/service"

	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestBuiltinFieldLabelsAsKube asks, for every built-in resource served
// and every field label any kind supports (and a few none does), whether
// kube's field label conversion (legacyscheme's, what kube-apiserver's
// list and watch handlers call) accepts it, and wants the server to
// accept the same and refuse the rest with kube's message.
func TestBuiltinFieldLabelsAsKube(t *testing.T) {
	builtins := resource.Builtins()
	candidates := []string{"metadata.name", "metadata.namespace", "spec.host", "status.replicas", "spec.nodeName", "bogus", "status.podIPs"}
	for _, r := range builtins {
		for k := range r.FieldPaths {
			if !slices.Contains(candidates, k) {
				candidates = append(candidates, k)
			}
		}
	}
	checked := 0
	for _, r := range builtins {
		if r.CreateOnly {
			continue
		}
		gvk := schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
		for _, label := range candidates {
			_, _, kubeErr := legacyscheme.Scheme.ConvertFieldLabel(gvk, label, "v")
			sel, err := selector.ParseFields(label + "=v")
			if err != nil {
				t.Fatal(err)
			}
			ours := registry.ValidateFields(r, sel)
			switch {
			case (kubeErr == nil) != (ours == nil):
				t.Errorf("%s %s: kube %v, ours %v", r.GroupResource(), label, kubeErr, ours)
			case kubeErr != nil && kubeErr.Error() != ours.Error():
				t.Errorf("%s %s: kube says %q, ours %q", r.GroupResource(), label, kubeErr, ours)
			}
			checked++
		}
	}
	t.Logf("%d resource and label pairs", checked)
}

// TestBuiltinFieldValuesAsKube compares the values field selectors test,
// read by the server from the stored JSON, with those kube's registries'
// GetAttrs give the same objects, for the printers' objects of the kinds
// with fields of their own.
func TestBuiltinFieldValuesAsKube(t *testing.T) {
	attrs := map[string]func(runtime.Object) (labels.Set, fields.Set, error){
		"pods": pod.GetAttrs, "nodes": node.GetAttrs, "replicationcontrollers": replicationcontroller.GetAttrs,
		"services": service.GetAttrs, "jobs": job.GetAttrs,
	}
	for _, c := range printerCases() {
		getAttrs := attrs[c.plural]
		if getAttrs == nil {
			continue
		}
		res := Builtin(t, c.gv.Group, c.gv.Version, c.plural)
		for _, doc := range c.objects {
			internal, ours := kubeInternal(t, c.gv, doc)
			_, kube, err := getAttrs(internal)
			if err != nil {
				t.Fatal(err)
			}
			got := registry.FieldSet(res, ours)
			for label := range res.FieldPaths {
				if label == "spec.host" { // an alias kube converts to spec.nodeName
					continue
				}
				if kube[label] != got[label] {
					t.Errorf("%s %s %s: kube %q, ours %q", c.plural, ours.Name(), label, kube[label], got[label])
				}
			}
		}
	}
}
