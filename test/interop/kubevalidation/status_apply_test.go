package kubevalidation

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/autoscaling/horizontalpodautoscaler"
	"k8s.io/kubernetes/pkg/registry/certificates/certificates"
	"k8s.io/kubernetes/pkg/registry/core/node"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/networking/servicecidr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/listwatch/listwatch/internal/server/patch"
	"github.com/listwatch/listwatch/test/interop"
)

// resetter is a kube strategy's GetResetFields.
type resetter interface {
	GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set
}

// filterer is a kube strategy's GetResetFieldsFilter, which a pod's parts
// have in place of GetResetFields.
type filterer interface {
	GetResetFieldsFilter() map[fieldpath.APIVersion]fieldpath.Filter
}

// sameObject is the object converter, defaulter and creater of a field
// manager over one version of unstructured objects.
type sameObject struct{ gvk schema.GroupVersionKind }

func (sameObject) Convert(in, out, _ any) error { return nil }
func (sameObject) ConvertToVersion(in runtime.Object, _ runtime.GroupVersioner) (runtime.Object, error) {
	return in, nil
}
func (sameObject) ConvertFieldLabel(_ schema.GroupVersionKind, label, value string) (string, string, error) {
	return label, value, nil
}
func (sameObject) Default(runtime.Object) {}
func (o sameObject) New(schema.GroupVersionKind) (runtime.Object, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(o.gvk)
	return u, nil
}

// kubeFieldManager is kube's field manager of gvk's objects written
// through sub ("" for the resource), its strategy's reset fields those of
// strategy, its types from kube's published OpenAPI document doc.
func kubeFieldManager(t *testing.T, doc string, gvk schema.GroupVersionKind, sub string, strategy any) *managedfields.FieldManager {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(interop.KubeModule(t, "v1.37.2"), "api", "openapi-spec", "v3", doc))
	if err != nil {
		t.Fatal(err)
	}
	var spec spec3.OpenAPI
	if err := json.Unmarshal(b, &spec); err != nil {
		t.Fatal(err)
	}
	tc, err := managedfields.NewTypeConverter(spec.Components.Schemas, false)
	if err != nil {
		t.Fatal(err)
	}
	reset := map[fieldpath.APIVersion]fieldpath.Filter{}
	switch strategy := strategy.(type) {
	case filterer:
		reset = strategy.GetResetFieldsFilter()
	case resetter:
		for v, s := range strategy.GetResetFields() {
			reset[v] = fieldpath.NewExcludeSetFilter(s)
		}
	}
	o := sameObject{gvk}
	fm, err := managedfields.NewDefaultFieldManager(tc, o, o, o, gvk, gvk.GroupVersion(), sub, reset)
	if err != nil {
		t.Fatal(err)
	}
	return fm
}

// TestPartApplies creates an object as one manager, then applies through
// a part (status, a CSR's approval, a pod's resize or ephemeral
// containers) a configuration setting spec, metadata and status as
// another, with kube's field manager (the strategies' reset fields or
// filters) and ours, and compares the managedFields: through status no
// spec field is owned, and metadata is but what the status strategy
// keeps; through a pod's parts, only what they write.
func TestPartApplies(t *testing.T) {
	type kind struct {
		gvk            schema.GroupVersionKind
		doc, plural    string
		main, strategy any
	}
	deployments := kind{schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}, "apis__apps__v1_openapi.json", "deployments", deployment.Strategy, deployment.StatusStrategy}
	pods := kind{schema.GroupVersionKind{Version: "v1", Kind: "Pod"}, "api__v1_openapi.json", "pods", pod.Strategy, pod.StatusStrategy}
	resizes := kind{pods.gvk, pods.doc, pods.plural, pod.Strategy, pod.ResizeStrategy}
	ephemerals := kind{pods.gvk, pods.doc, pods.plural, pod.Strategy, pod.EphemeralContainersStrategy}
	nodes := kind{schema.GroupVersionKind{Version: "v1", Kind: "Node"}, "api__v1_openapi.json", "nodes", node.Strategy, node.StatusStrategy}
	hpasV1 := kind{schema.GroupVersionKind{Group: "autoscaling", Version: "v1", Kind: "HorizontalPodAutoscaler"}, "apis__autoscaling__v1_openapi.json", "horizontalpodautoscalers", horizontalpodautoscaler.Strategy, horizontalpodautoscaler.StatusStrategy}
	cidrs := kind{schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: "ServiceCIDR"}, "apis__networking.k8s.io__v1_openapi.json", "servicecidrs", servicecidr.Strategy, servicecidr.StatusStrategy}
	csrGVK := schema.GroupVersionKind{Group: "certificates.k8s.io", Version: "v1", Kind: "CertificateSigningRequest"}
	csrs := kind{csrGVK, "apis__certificates.k8s.io__v1_openapi.json", "certificatesigningrequests", certificates.Strategy, certificates.StatusStrategy}
	approvals := kind{csrGVK, "apis__certificates.k8s.io__v1_openapi.json", "certificatesigningrequests", certificates.Strategy, certificates.ApprovalStrategy}

	// No atomic struct (ownerReferences' items, label selectors) in what
	// the creator writes: ours does not know them (what is left).
	meta := func(labels ...any) map[string]any {
		return counts("name", "o", "namespace", "default", "labels", counts(labels...), "annotations", counts("a", "1"))
	}
	container := func(image string) []any { return []any{counts("name", "c", "image", image)} }
	for _, c := range []struct {
		name   string
		k      kind
		sub    string
		live   map[string]any
		config map[string]any
	}{
		{"deployment", deployments, "status",
			counts("metadata", meta("app", "d"), "spec", counts("replicas", 1,
				"template", counts("metadata", counts("labels", counts("app", "d")), "spec", counts("containers", container("busybox"))))),
			counts("metadata", meta("app", "d", "tier", "web"), "spec", counts("replicas", 3), "status", counts("replicas", 2, "readyReplicas", 1))},
		{"pod", pods, "status",
			counts("metadata", meta("app", "p"), "spec", counts("containers", container("busybox"))),
			counts("metadata", counts("name", "o", "namespace", "default", "labels", counts("app", "q"),
				"ownerReferences", []any{counts("apiVersion", "v1", "kind", "ConfigMap", "name", "other", "uid", "u2")}),
				"spec", counts("containers", container("nginx")), "status", counts("phase", "Running"))},
		{"pod resize", resizes, "resize",
			counts("metadata", meta("app", "p"), "spec", counts("containers", []any{counts("name", "c", "image", "busybox",
				"resources", counts("requests", counts("cpu", "100m")))})),
			counts("metadata", meta("app", "q"), "spec", counts("containers", []any{counts("name", "c", "image", "nginx",
				"resources", counts("requests", counts("cpu", "200m")), "resizePolicy", []any{counts("resourceName", "cpu", "restartPolicy", "NotRequired")})}),
				"status", counts("phase", "Running"))},
		{"pod ephemeral containers", ephemerals, "ephemeralcontainers",
			counts("metadata", meta("app", "p"), "spec", counts("containers", container("busybox"))),
			counts("metadata", meta("app", "q"), "spec", counts("containers", container("nginx"),
				"ephemeralContainers", []any{counts("name", "debug", "image", "busybox", "targetContainerName", "c")}))},
		{"node", nodes, "status",
			counts("metadata", counts("name", "o", "labels", counts("zone", "a")), "spec", counts("unschedulable", true)),
			counts("metadata", counts("name", "o", "labels", counts("zone", "b")), "spec", counts("unschedulable", false, "providerID", "p"),
				"status", counts("capacity", counts("pods", "110")))},
		{"hpa v1", hpasV1, "status",
			counts("metadata", meta("app", "h"), "spec", counts("maxReplicas", 3)),
			counts("metadata", meta("app", "i"), "spec", counts("maxReplicas", 5), "status", counts("currentReplicas", 1, "desiredReplicas", 2))},
		{"service cidr", cidrs, "status",
			counts("metadata", counts("name", "o", "labels", counts("a", "1")), "spec", counts("cidrs", []any{"10.0.0.0/24"})),
			counts("metadata", counts("name", "o", "labels", counts("a", "2")), "status", counts("conditions", []any{metaCondition("Ready", "True")}))},
		{"csr status", csrs, "status",
			counts("metadata", counts("name", "o"), "spec", counts("signerName", "example.com/s", "request", "cmVx", "usages", []any{"client auth"})),
			counts("metadata", counts("name", "o", "labels", counts("issued", "yes")), "spec", counts("signerName", "example.com/t"),
				"status", counts("certificate", "Y2VydA==", "conditions", []any{counts("type", "Failed", "status", "True")}))},
		{"csr approval", approvals, "approval",
			counts("metadata", counts("name", "o"), "spec", counts("signerName", "example.com/s", "request", "cmVx", "usages", []any{"client auth"})),
			counts("metadata", counts("name", "o", "labels", counts("approved", "yes")), "spec", counts("signerName", "example.com/t"),
				"status", counts("certificate", "Y2VydA==", "conditions", []any{counts("type", "Approved", "status", "True")}))},
	} {
		t.Run(c.name, func(t *testing.T) {
			apiVersion := c.k.gvk.GroupVersion().String()
			for _, o := range []map[string]any{c.live, c.config} {
				o["apiVersion"], o["kind"] = apiVersion, c.k.gvk.Kind
			}
			created, err := kubeFieldManager(t, c.k.doc, c.k.gvk, "", c.k.main).Update(
				&unstructured.Unstructured{Object: counts("apiVersion", apiVersion, "kind", c.k.gvk.Kind)},
				&unstructured.Unstructured{Object: deepCopy(c.live).(map[string]any)}, "creator")
			if err != nil {
				t.Fatal(err)
			}
			applied, err := kubeFieldManager(t, c.k.doc, c.k.gvk, c.sub, c.k.strategy).Apply(
				created, &unstructured.Unstructured{Object: deepCopy(c.config).(map[string]any)}, "ctl", true)
			if err != nil {
				t.Fatal(err)
			}
			want := entriesOf(t, applied.(*unstructured.Unstructured).Object)

			r := ours[c.k.gvk.Group+"/"+c.k.gvk.Version+"/"+c.k.plural]
			manager := func(name, sub string) patch.Manager {
				return patch.Manager{Name: name, APIVersion: apiVersion, Subresource: sub, Reset: r.ResetFields(sub), Only: r.Parts[sub].Only,
					Schema: patch.SchemaFor(r.Group, r.Version, r.Kind), Now: time.Now()}
			}
			live := deepCopy(c.live).(map[string]any)
			manager("creator", "").Update(nil, live)
			got, err := manager("ctl", c.sub).Apply(live, deepCopy(c.config).(map[string]any), true)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(want, entriesOf(t, got)); d != "" {
				t.Errorf("managedFields (-kube +ours):\n%s", d)
			}
		})
	}
}

// entriesOf are obj's managedFields less their times.
func entriesOf(t *testing.T, obj map[string]any) []any {
	t.Helper()
	md, _ := obj["metadata"].(map[string]any)
	var out []any
	if err := json.Unmarshal(encode(t, counts("l", md["managedFields"])), &struct{ L *[]any }{&out}); err != nil {
		t.Fatal(err)
	}
	for _, e := range out {
		delete(e.(map[string]any), "time")
	}
	return out
}
