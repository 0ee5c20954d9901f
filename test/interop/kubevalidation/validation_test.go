// Package kubevalidation proves listwatch's Go validation of the built-in
// kinds equal to kube-apiserver's: for real manifests and for copies of
// them each broken in one way, the causes kube's registry strategy gives
// (its Validate, on the internal object converted from v1 after kube's
// defaulting) and the causes ours gives (after our pruning and defaulting,
// as the server runs them) are the same set of (field, type, message).
package kubevalidation

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	sigsjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/test/interop/manifests"
)

// kind is one validated kind: kube's registry strategy, our resource, and
// where its pod spec sits.
type kind struct {
	strategy interface {
		Validate(ctx context.Context, obj runtime.Object) field.ErrorList
		PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
		ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	}
	plural  string
	podSpec []string
}

var kinds = map[schema.GroupVersionKind]kind{
	{Version: "v1", Kind: "Pod"}:                       {pod.Strategy, "pods", []string{"spec"}},
	{Version: "v1", Kind: "ReplicationController"}:     {replicationcontroller.Strategy, "replicationcontrollers", []string{"spec", "template", "spec"}},
	{Version: "v1", Kind: "Service"}:                   {service.Strategy, "services", nil},
	{Version: "v1", Kind: "PersistentVolumeClaim"}:     {persistentvolumeclaim.Strategy, "persistentvolumeclaims", nil},
	{Version: "v1", Kind: "ConfigMap"}:                 {configmap.Strategy, "configmaps", nil},
	{Version: "v1", Kind: "Secret"}:                    {secret.Strategy, "secrets", nil},
	{Version: "v1", Kind: "PodTemplate"}:               {podtemplate.Strategy, "podtemplates", []string{"template", "spec"}},
	{Group: "apps", Version: "v1", Kind: "Deployment"}: {deployment.Strategy, "deployments", []string{"spec", "template", "spec"}},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}:  {daemonset.Strategy, "daemonsets", []string{"spec", "template", "spec"}},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}: {replicaset.Strategy, "replicasets", []string{"spec", "template", "spec"}},
	// Only StatefulSets' and Jobs' update rules are replicated.
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}: {statefulset.Strategy, "statefulsets", nil},
	{Group: "batch", Version: "v1", Kind: "Job"}:        {job.Strategy, "jobs", nil},
}

// listwatch does not refuse privileged containers: it is kube-apiserver
// with --allow-privileged=true, as kubeadm and kind run it.
func init() { capabilities.Initialize(capabilities.Capabilities{AllowPrivileged: true}) }

// ours are the server's resources, pruned and defaulted as it does.
var ours = func() map[string]*resource.Resource {
	rs := resource.Builtins()
	crd.PruneBuiltins(rs)
	m := map[string]*resource.Resource{}
	for _, r := range rs {
		m[r.Group+"/"+r.Version+"/"+r.Plural] = r
	}
	return m
}()

// cause is a StatusCause as a comparable value.
type cause struct{ Field, Type, Message string }

// allocated are the fields of a Service that kube-apiserver's allocators
// set before its strategy validates (the service storage's BeginCreate
// runs before rest.BeforeCreate); the strategy alone, kube's or ours, finds
// them Required. Allocation is not validation's part: both sides leave
// out those Required causes (the server's tests prove the allocator).
var allocated = map[string]bool{
	"spec.clusterIPs": true, "spec.ipFamilies": true, "spec.ipFamilyPolicy": true, "spec.healthCheckNodePort": true,
}

// kubeCauses runs kube's strategy Validate on the object js of kind gvk
// as kube-apiserver does on create: decode, default, convert to internal.
// Causes about metadata are left out: the server's metadata checks are
// not this package's and are proven elsewhere.
func kubeCauses(t *testing.T, gvk schema.GroupVersionKind, js []byte) []cause {
	t.Helper()
	return kubeErrors(kinds[gvk].strategy.Validate(t.Context(), kubeInternal(t, gvk, js)))
}

// kubeUpdateCauses runs kube's strategy on an update from the object old
// to js, as kube-apiserver does: PrepareForUpdate, then ValidateUpdate.
func kubeUpdateCauses(t *testing.T, gvk schema.GroupVersionKind, js, old []byte) []cause {
	t.Helper()
	obj, was := kubeInternal(t, gvk, js), kubeInternal(t, gvk, old)
	kinds[gvk].strategy.PrepareForUpdate(t.Context(), obj, was)
	return kubeErrors(kinds[gvk].strategy.ValidateUpdate(t.Context(), obj, was))
}

// kubeInternal is js decoded, defaulted and converted to kube's internal
// type.
func kubeInternal(t *testing.T, gvk schema.GroupVersionKind, js []byte) runtime.Object {
	t.Helper()
	s := legacyscheme.Scheme
	obj, err := s.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(js, obj); err != nil {
		t.Fatalf("decode: %v", err)
	}
	s.Default(obj)
	internal, err := s.ConvertToVersion(obj, schema.GroupVersion{Group: gvk.Group, Version: runtime.APIVersionInternal})
	if err != nil {
		t.Fatal(err)
	}
	return internal
}

// kubeErrors are errs as causes, but for metadata's and allocated fields',
// as comparable.
func kubeErrors(errs field.ErrorList) []cause {
	var out []cause
	for _, e := range errs {
		if !strings.HasPrefix(e.Field, "metadata.") && !(allocated[e.Field] && e.Type == field.ErrorTypeRequired) {
			out = append(out, comparable(cause{e.Field, string(e.Type), e.ErrorBody()}))
		}
	}
	return sorted(out)
}

// comparable is c less what ours does not reproduce: the lines after
// the first (kube's go-cmp diff of a refused Pod or claim update), and a
// Job's template as the bad value of "field is immutable" (kube renders
// its internal Go type as JSON).
func comparable(c cause) cause {
	c.Message, _, _ = strings.Cut(c.Message, "\n")
	if c.Field == "spec.template" && strings.HasSuffix(c.Message, ": field is immutable") {
		c.Message = "Invalid value: <the template>: field is immutable"
	}
	return c
}

// ourCauses runs our pruning, defaulting and validation on js.
func ourCauses(t *testing.T, gvk schema.GroupVersionKind, js []byte) []cause {
	t.Helper()
	r := ours[gvk.Group+"/"+gvk.Version+"/"+kinds[gvk].plural]
	obj := ourObject(t, r, js)
	var cs []api.StatusCause
	if r.Validate != nil {
		cs = r.Validate(obj)
	}
	if r.ValidateCreate != nil {
		cs = append(cs, r.ValidateCreate(t.Context(), obj)...)
	}
	return ourErrors(cs)
}

// ourUpdateCauses runs our validation of an update from old to js.
func ourUpdateCauses(t *testing.T, gvk schema.GroupVersionKind, js, old []byte) []cause {
	t.Helper()
	r := ours[gvk.Group+"/"+gvk.Version+"/"+kinds[gvk].plural]
	obj := ourObject(t, r, js)
	var cs []api.StatusCause
	if r.Validate != nil {
		cs = r.Validate(obj)
	}
	if r.ValidateUpdate != nil {
		cs = append(cs, r.ValidateUpdate(t.Context(), obj, ourObject(t, r, old))...)
	}
	return ourErrors(cs)
}

func ourObject(t *testing.T, r *resource.Resource, js []byte) api.Object {
	t.Helper()
	obj, err := api.ParseObject(js)
	if err != nil {
		t.Fatal(err)
	}
	r.PruneAndDefault(obj)
	return obj
}

func ourErrors(cs []api.StatusCause) []cause {
	var out []cause
	for _, c := range cs {
		if !(allocated[c.Field] && c.Type == api.CauseTypeFieldValueRequired) {
			out = append(out, comparable(cause{c.Field, string(c.Type), c.Message}))
		}
	}
	return sorted(out)
}

func sorted(cs []cause) []cause {
	slices.SortFunc(cs, func(a, b cause) int { return strings.Compare(a.Field+a.Type+a.Message, b.Field+b.Type+b.Message) })
	return cs
}

// compare reports where kube's causes and ours differ and returns kube's.
func compare(t *testing.T, gvk schema.GroupVersionKind, js []byte) []cause {
	t.Helper()
	kube := kubeCauses(t, gvk, js)
	if diff := cmp.Diff(kube, ourCauses(t, gvk, js)); diff != "" {
		t.Errorf("%s: causes (-kube +ours):\n%s\nobject: %s", gvk.Kind, diff, js)
	}
	return kube
}

// manifest is one object of testdata/manifests.
type manifest struct {
	name string
	gvk  schema.GroupVersionKind
	obj  map[string]any
}

// readManifests reads the objects of the validated kinds in testdata/manifests
// (see its README), each given the namespace the server would.
func readManifests(t *testing.T) []manifest {
	t.Helper()
	var ms []manifest
	manifests.Each(t, "../testdata/manifests", func(name string, tm metav1.TypeMeta, js []byte) {
		gvk := tm.GroupVersionKind()
		if _, ok := kinds[gvk]; !ok {
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(js, &obj); err != nil {
			t.Fatal(err)
		}
		md, _ := obj["metadata"].(map[string]any)
		md["namespace"] = "default"
		ms = append(ms, manifest{name, gvk, obj})
	})
	return ms
}

func encode(t *testing.T, obj map[string]any) []byte {
	t.Helper()
	js, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// createValidated says whether our validation of gvk on create is proven
// here; the other kinds are proven on updates only.
func createValidated(gvk schema.GroupVersionKind) bool {
	return ours[gvk.Group+"/"+gvk.Version+"/"+kinds[gvk].plural].Validate != nil
}

// TestManifests validates the real manifests both ways.
func TestManifests(t *testing.T) {
	ms := readManifests(t)
	if len(ms) < 58 {
		t.Fatalf("%d objects of the validated kinds in the manifests, want at least 58", len(ms))
	}
	// The manifests kube rejects, and why.
	rejected := map[string]string{
		"kubernetes-doc-yaml/admin/high-availability/kube-scheduler.yaml#Pod": "mounts a token volume it does not declare",
	}
	for _, m := range ms {
		if !createValidated(m.gvk) {
			continue
		}
		t.Run(m.name, func(t *testing.T) {
			kube := compare(t, m.gvk, encode(t, m.obj))
			if _, want := rejected[m.name]; want != (len(kube) > 0) {
				t.Errorf("kube's causes %v; want some: %v", kube, want)
			}
		})
	}
}

// podSpecMutations each break one rule of a pod spec.
var podSpecMutations = map[string]func(spec map[string]any){
	"container name not a DNS label": func(s map[string]any) { container(s)["name"] = "Bad_Name" },
	"container name duplicate": func(s map[string]any) {
		s["containers"] = append(s["containers"].([]any), deepCopy(container(s)))
	},
	"init container name of a container": func(s map[string]any) {
		init := deepCopy(container(s)).(map[string]any)
		s["initContainers"] = append([]any{init}, list(s, "initContainers")...)
	},
	"image missing":                func(s map[string]any) { delete(container(s), "image") },
	"no containers":                func(s map[string]any) { s["containers"] = []any{} },
	"restartPolicy unknown":        func(s map[string]any) { s["restartPolicy"] = "Sometimes" },
	"dnsPolicy unknown":            func(s map[string]any) { s["dnsPolicy"] = "Nowhere" },
	"imagePullPolicy unknown":      func(s map[string]any) { container(s)["imagePullPolicy"] = "Sometimes" },
	"terminationMessagePolicy bad": func(s map[string]any) { container(s)["terminationMessagePolicy"] = "Always" },
	"mount of no volume":           func(s map[string]any) { addMount(s, map[string]any{"name": "missing", "mountPath": "/missing"}) },
	"mount without path":           func(s map[string]any) { addVolume(s, "vol-a"); addMount(s, map[string]any{"name": "vol-a"}) },
	"mount path twice": func(s map[string]any) {
		addVolume(s, "vol-a")
		addMount(s, map[string]any{"name": "vol-a", "mountPath": "/same"})
		addMount(s, map[string]any{"name": "vol-a", "mountPath": "/same"})
	},
	"volume name duplicate": func(s map[string]any) { addVolume(s, "vol-a"); addVolume(s, "vol-a") },
	"volume name not a DNS label": func(s map[string]any) {
		addVolume(s, "Vol.A")
		addMount(s, map[string]any{"name": "Vol.A", "mountPath": "/a"})
	},
	"volume of two sources": func(s map[string]any) {
		s["volumes"] = append(list(s, "volumes"), map[string]any{"name": "two", "emptyDir": map[string]any{}, "hostPath": map[string]any{"path": "/x"}, "cephfs": map[string]any{"monitors": []any{"m"}}})
	},
	"port number out of range": func(s map[string]any) { addPort(s, map[string]any{"containerPort": 70000, "hostPort": -1}) },
	"port protocol unknown":    func(s map[string]any) { addPort(s, map[string]any{"containerPort": 81, "protocol": "ICMP"}) },
	"port names": func(s map[string]any) {
		addPort(s, map[string]any{"containerPort": 82, "name": "-Bad--name-too-long"})
		addPort(s, map[string]any{"containerPort": 83, "name": "dup"})
		addPort(s, map[string]any{"containerPort": 84, "name": "dup"})
		addPort(s, map[string]any{"containerPort": 85, "name": "123"})
	},
	"env names": func(s map[string]any) {
		c := container(s)
		c["env"] = append(list(c, "env"), map[string]any{"name": "A=B"}, map[string]any{"name": "é"}, map[string]any{"name": "ok.name-1"})
	},
	"requests above limits": func(s map[string]any) {
		container(s)["resources"] = map[string]any{
			"requests": map[string]any{"cpu": "2", "memory": "1Gi", "example.com/gpu": "1", "hugepages-2Mi": "2Mi"},
			"limits":   map[string]any{"cpu": "500m", "memory": "1Gi", "example.com/gpu": "2"},
		}
	},
}

// objectMutations each break one rule of a Deployment, ReplicaSet or
// DaemonSet.
var objectMutations = map[string]func(obj map[string]any){
	"minReadySeconds negative": func(o map[string]any) { spec(o)["minReadySeconds"] = -2 },
	"selector empty":           func(o map[string]any) { spec(o)["selector"] = map[string]any{} },
	"selector matches no labels": func(o map[string]any) {
		spec(o)["selector"] = map[string]any{"matchLabels": map[string]any{"no": "such"}}
	},
	"selector by expression": func(o map[string]any) {
		spec(o)["selector"] = map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "DoesNotExist"}}}
		template(o)["metadata"] = map[string]any{"labels": map[string]any{"app": "x", "tier": "web"}}
	},
	"template restartPolicy Never": func(o map[string]any) { template(o)["spec"].(map[string]any)["restartPolicy"] = "Never" },
	"template activeDeadline":      func(o map[string]any) { template(o)["spec"].(map[string]any)["activeDeadlineSeconds"] = 5 },
}

// replicasMutations each break one rule of a Deployment or ReplicaSet.
var replicasMutations = map[string]func(obj map[string]any){
	"replicas negative": func(o map[string]any) { spec(o)["replicas"] = -1 },
	"selector missing":  func(o map[string]any) { delete(spec(o), "selector") },
}

// daemonSetMutations each break one rule of a DaemonSet only.
var daemonSetMutations = map[string]func(obj map[string]any){
	"updateStrategy unknown": func(o map[string]any) {
		spec(o)["updateStrategy"] = map[string]any{"type": "Blue", "rollingUpdate": map[string]any{"maxSurge": 1}}
	},
	"selector missing": func(o map[string]any) { delete(spec(o), "selector") },
}

// replicationControllerMutations each break one rule of a
// ReplicationController.
var replicationControllerMutations = map[string]func(obj map[string]any){
	"replicas negative":          func(o map[string]any) { spec(o)["replicas"] = -1 },
	"minReadySeconds negative":   func(o map[string]any) { spec(o)["minReadySeconds"] = -2 },
	"selector matches no labels": func(o map[string]any) { spec(o)["selector"] = map[string]any{"no": "such"} },
	"template missing":           func(o map[string]any) { delete(spec(o), "template") },
	"template restartPolicy Never": func(o map[string]any) {
		template(o)["spec"].(map[string]any)["restartPolicy"] = "OnFailure"
	},
	"template activeDeadline": func(o map[string]any) { template(o)["spec"].(map[string]any)["activeDeadlineSeconds"] = 5 },
}

// serviceMutations each break one rule of a Service.
var serviceMutations = map[string]func(obj map[string]any){
	"no ports": func(o map[string]any) { spec(o)["ports"] = []any{} },
	"ports": func(o map[string]any) {
		spec(o)["ports"] = append(list(spec(o), "ports"),
			map[string]any{"port": 70000, "protocol": "ICMP", "targetPort": "Bad--Name"},
			map[string]any{"name": "Dup", "port": 81, "targetPort": 0},
			map[string]any{"name": "Dup", "port": 81},
		)
	},
	"type unknown":    func(o map[string]any) { spec(o)["type"] = "Everywhere" },
	"sessionAffinity": func(o map[string]any) { spec(o)["sessionAffinity"] = "Sticky" },
	"selector labels": func(o map[string]any) { spec(o)["selector"] = map[string]any{"-bad": "a b"} },
	"node port on ClusterIP": func(o map[string]any) {
		spec(o)["type"] = "ClusterIP"
		spec(o)["ports"] = []any{map[string]any{"name": "a", "port": 80, "nodePort": 30001}, map[string]any{"name": "b", "port": 81, "nodePort": 30001}}
	},
	"externalName missing": func(o map[string]any) {
		spec(o)["type"] = "ExternalName"
		for _, f := range []string{"clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy", "externalTrafficPolicy", "selector"} {
			delete(spec(o), f)
		}
	},
	"traffic policy on ClusterIP": func(o map[string]any) {
		spec(o)["type"] = "ClusterIP"
		spec(o)["externalTrafficPolicy"] = "Local"
		delete(spec(o), "externalIPs")
	},
	"allocateLoadBalancerNodePorts on NodePort": func(o map[string]any) {
		spec(o)["type"] = "NodePort"
		spec(o)["allocateLoadBalancerNodePorts"] = true
	},
	"healthCheckNodePort on NodePort": func(o map[string]any) {
		spec(o)["type"] = "NodePort"
		spec(o)["externalTrafficPolicy"] = "Local"
		spec(o)["healthCheckNodePort"] = 30100
	},
	"healthCheckNodePort out of range": func(o map[string]any) {
		spec(o)["type"] = "LoadBalancer"
		spec(o)["externalTrafficPolicy"] = "Local"
		spec(o)["healthCheckNodePort"] = 70000
	},
	"loadBalancerClass on ClusterIP": func(o map[string]any) {
		clusterIPType(o)
		spec(o)["loadBalancerClass"] = "example.com/lb"
	},
	"loadBalancerClass not a qualified name": func(o map[string]any) {
		spec(o)["type"] = "LoadBalancer"
		spec(o)["loadBalancerClass"] = "-lb/Bad Class"
	},
	"loadBalancerSourceRanges on ClusterIP": func(o map[string]any) {
		clusterIPType(o)
		spec(o)["loadBalancerSourceRanges"] = []any{"10.0.0.0/8"}
	},
	"internalTrafficPolicy unknown": func(o map[string]any) { spec(o)["internalTrafficPolicy"] = "Sideways" },
	"trafficDistribution unknown":   func(o map[string]any) { spec(o)["trafficDistribution"] = "PreferFar" },
	"affinity timeout zero": func(o map[string]any) {
		spec(o)["sessionAffinity"] = "ClientIP"
		spec(o)["sessionAffinityConfig"] = map[string]any{"clientIP": map[string]any{"timeoutSeconds": 0}}
	},
	"affinity timeout above a day": func(o map[string]any) {
		spec(o)["sessionAffinity"] = "ClientIP"
		spec(o)["sessionAffinityConfig"] = map[string]any{"clientIP": map[string]any{"timeoutSeconds": 86401}}
	},
	"externalIPs": func(o map[string]any) {
		spec(o)["externalIPs"] = []any{"0.0.0.0", "127.0.0.1", "169.254.1.1", "224.0.0.1", "ff02::1", "fe80::1", "::1", "010.1.2.3", "::ffff:10.1.2.3", "10.1.2", "203.0.113.7"}
	},
	"loadBalancerSourceRanges": func(o map[string]any) {
		spec(o)["loadBalancerSourceRanges"] = []any{" 10.0.0.0/8 ", "10.0.0.1/8", "010.0.0.0/8", "10.0.0.0/08", "::ffff:10.0.0.0/104", "10.0.0.0/33", "2001:db8::/64", "nope"}
	},
	"appProtocol not a qualified name": func(o map[string]any) {
		spec(o)["ports"] = append(list(spec(o), "ports"), map[string]any{"name": "app", "port": 8443, "appProtocol": "not/a/name"})
	},
}

// clusterIPType makes a Service a ClusterIP one, without what only
// externally accessible ones may have.
func clusterIPType(o map[string]any) {
	spec(o)["type"] = "ClusterIP"
	for _, f := range []string{"externalTrafficPolicy", "externalIPs", "healthCheckNodePort", "allocateLoadBalancerNodePorts", "loadBalancerClass", "loadBalancerSourceRanges"} {
		delete(spec(o), f)
	}
	for _, p := range list(spec(o), "ports") {
		delete(p.(map[string]any), "nodePort")
	}
}

// claimMutations each break one rule of a PersistentVolumeClaim.
var claimMutations = map[string]func(obj map[string]any){
	"no access modes":          func(o map[string]any) { delete(spec(o), "accessModes") },
	"access mode unknown":      func(o map[string]any) { spec(o)["accessModes"] = []any{"ReadWriteSometimes"} },
	"ReadWriteOncePod and RWO": func(o map[string]any) { spec(o)["accessModes"] = []any{"ReadWriteOncePod", "ReadWriteOnce"} },
	"no storage request":       func(o map[string]any) { at(o, "spec", "resources")["requests"] = map[string]any{"cpu": "1"} },
	"storage zero":             func(o map[string]any) { at(o, "spec", "resources", "requests")["storage"] = "0" },
	"storage negative":         func(o map[string]any) { at(o, "spec", "resources", "requests")["storage"] = "-5Gi" },
	"volumeMode unknown":       func(o map[string]any) { spec(o)["volumeMode"] = "Raw" },
}

// dataMutations each break one rule of a ConfigMap or Secret (whose data
// is base64; a ConfigMap's is not, but "eHh4" is data either way).
var dataMutations = map[string]func(obj map[string]any){
	"data keys": func(o map[string]any) {
		at(o, "data")["a b"] = "eA=="
		at(o, "data")[".."] = "eA=="
		at(o, "data")["..x"] = "eA=="
	},
	"data too large": func(o map[string]any) { at(o, "data")["big"] = strings.Repeat("eHh4", 1<<20/3+1) },
}

// configMapMutations each break one rule of a ConfigMap only.
var configMapMutations = map[string]func(obj map[string]any){
	"data key twice": func(o map[string]any) {
		at(o, "data")["k"] = "x"
		at(o, "binaryData")["k"] = "eA=="
	},
}

// deploymentMutations each break one rule of a Deployment only.
var deploymentMutations = map[string]func(obj map[string]any){
	"strategy Recreate with rollingUpdate": func(o map[string]any) {
		spec(o)["strategy"] = map[string]any{"type": "Recreate", "rollingUpdate": map[string]any{"maxSurge": 1}}
	},
	"strategy unknown": func(o map[string]any) {
		spec(o)["strategy"] = map[string]any{"type": "BlueGreen", "rollingUpdate": map[string]any{"maxSurge": "10%", "maxUnavailable": 0}}
	},
	"progressDeadlineSeconds not above minReadySeconds": func(o map[string]any) {
		spec(o)["progressDeadlineSeconds"] = 10
		spec(o)["minReadySeconds"] = 10
	},
	"revisionHistoryLimit negative": func(o map[string]any) { spec(o)["revisionHistoryLimit"] = -1 },
}

// TestMutations breaks each real manifest of a validated kind in each way
// that applies to it and validates the copy both ways.
func TestMutations(t *testing.T) {
	n := 0
	for _, m := range readManifests(t) {
		if !createValidated(m.gvk) {
			continue
		}
		run := func(name string, mutate func(map[string]any)) {
			obj := deepCopy(m.obj).(map[string]any)
			mutate(obj)
			n++
			t.Run(m.name+"/"+name, func(t *testing.T) {
				if kube := compare(t, m.gvk, encode(t, obj)); len(kube) == 0 {
					t.Error("the mutation breaks no rule of kube's")
				}
			})
		}
		for name, mutate := range podSpecMutations {
			if kinds[m.gvk].podSpec != nil {
				run(name, func(obj map[string]any) { mutate(at(obj, kinds[m.gvk].podSpec...)) })
			}
		}
		if m.gvk.Group == "apps" {
			for name, mutate := range objectMutations {
				run(name, mutate)
			}
		}
		byKind := map[string][]map[string]func(map[string]any){
			"Deployment": {replicasMutations, deploymentMutations},
			"ReplicaSet": {replicasMutations},
			"DaemonSet":  {daemonSetMutations},

			"ReplicationController": {replicationControllerMutations},
			"Service":               {serviceMutations},
			"PersistentVolumeClaim": {claimMutations},
			"ConfigMap":             {dataMutations, configMapMutations},
			"Secret":                {dataMutations},
		}
		for _, mutations := range byKind[m.gvk.Kind] {
			for name, mutate := range mutations {
				run(name, mutate)
			}
		}
	}
	if n < 980 {
		t.Fatalf("%d mutated objects, want at least 980", n)
	}
}

func at(obj map[string]any, path ...string) map[string]any {
	for _, p := range path {
		next, _ := obj[p].(map[string]any)
		if next == nil {
			next = map[string]any{}
			obj[p] = next
		}
		obj = next
	}
	return obj
}

func spec(o map[string]any) map[string]any     { return at(o, "spec") }
func template(o map[string]any) map[string]any { return at(o, "spec", "template") }

func list(m map[string]any, key string) []any {
	l, _ := m[key].([]any)
	return l
}

// container is a pod spec's first container (one is made if none).
func container(s map[string]any) map[string]any {
	cs := list(s, "containers")
	if len(cs) == 0 {
		cs = []any{map[string]any{"name": "made", "image": "busybox"}}
		s["containers"] = cs
	}
	return cs[0].(map[string]any)
}

func addVolume(s map[string]any, name string) {
	s["volumes"] = append(list(s, "volumes"), map[string]any{"name": name, "emptyDir": map[string]any{}})
}

func addMount(s map[string]any, mount map[string]any) {
	c := container(s)
	c["volumeMounts"] = append(list(c, "volumeMounts"), mount)
}

func addPort(s map[string]any, port map[string]any) {
	c := container(s)
	c["ports"] = append(list(c, "ports"), port)
}

func deepCopy(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		panic(err)
	}
	return out
}
