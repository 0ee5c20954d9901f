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
	"k8s.io/apimachinery/pkg/api/operation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/kubernetes/pkg/registry/apps/daemonset"
	"k8s.io/kubernetes/pkg/registry/apps/deployment"
	"k8s.io/kubernetes/pkg/registry/apps/replicaset"
	"k8s.io/kubernetes/pkg/registry/apps/statefulset"
	"k8s.io/kubernetes/pkg/registry/batch/cronjob"
	"k8s.io/kubernetes/pkg/registry/batch/job"
	"k8s.io/kubernetes/pkg/registry/core/configmap"
	"k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim"
	"k8s.io/kubernetes/pkg/registry/core/pod"
	"k8s.io/kubernetes/pkg/registry/core/podtemplate"
	"k8s.io/kubernetes/pkg/registry/core/replicationcontroller"
	"k8s.io/kubernetes/pkg/registry/core/secret"
	"k8s.io/kubernetes/pkg/registry/core/service"
	"k8s.io/kubernetes/pkg/registry/networking/ingress"
	"k8s.io/kubernetes/pkg/registry/networking/networkpolicy"
	sigsjson "sigs.k8s.io/json"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/crd"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/test/interop/manifests"
)

// kind is one validated kind: kube's registry strategy, our resource, and
// where its pod spec sits.
type kind struct {
	strategy interface {
		PrepareForCreate(ctx context.Context, obj runtime.Object)
		Validate(ctx context.Context, obj runtime.Object) field.ErrorList
		PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
		ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	}
	plural  string
	podSpec []string
}

var kinds = map[schema.GroupVersionKind]kind{
	{Version: "v1", Kind: "Pod"}:                                       {pod.Strategy, "pods", []string{"spec"}},
	{Version: "v1", Kind: "ReplicationController"}:                     {replicationcontroller.Strategy, "replicationcontrollers", []string{"spec", "template", "spec"}},
	{Version: "v1", Kind: "Service"}:                                   {service.Strategy, "services", nil},
	{Version: "v1", Kind: "PersistentVolumeClaim"}:                     {persistentvolumeclaim.Strategy, "persistentvolumeclaims", nil},
	{Version: "v1", Kind: "ConfigMap"}:                                 {configmap.Strategy, "configmaps", nil},
	{Version: "v1", Kind: "Secret"}:                                    {secret.Strategy, "secrets", nil},
	{Version: "v1", Kind: "PodTemplate"}:                               {podtemplate.Strategy, "podtemplates", []string{"template", "spec"}},
	{Group: "apps", Version: "v1", Kind: "Deployment"}:                 {deployment.Strategy, "deployments", []string{"spec", "template", "spec"}},
	{Group: "apps", Version: "v1", Kind: "DaemonSet"}:                  {daemonset.Strategy, "daemonsets", []string{"spec", "template", "spec"}},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:                 {replicaset.Strategy, "replicasets", []string{"spec", "template", "spec"}},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}:                {statefulset.Strategy, "statefulsets", []string{"spec", "template", "spec"}},
	{Group: "batch", Version: "v1", Kind: "Job"}:                       {job.Strategy, "jobs", []string{"spec", "template", "spec"}},
	{Group: "networking.k8s.io", Version: "v1", Kind: "Ingress"}:       {ingress.Strategy, "ingresses", nil},
	{Group: "networking.k8s.io", Version: "v1", Kind: "NetworkPolicy"}: {networkpolicy.Strategy, "networkpolicies", nil},
	{Group: "batch", Version: "v1", Kind: "CronJob"}:                   {cronjob.Strategy, "cronjobs", []string{"spec", "jobTemplate", "spec", "template", "spec"}},
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

// kubeCauses runs kube's strategy on the object js of kind gvk as
// kube-apiserver does on create: decode, default, convert to internal,
// PrepareForCreate, Validate and, for kinds that have it, declarative
// validation (rest.ValidateCreate less its metadata checks). Causes about
// metadata are left out but for the kinds' own rules on names: the
// server's metadata checks are not this package's and are proven
// elsewhere.
func kubeCauses(t *testing.T, gvk schema.GroupVersionKind, js []byte) []cause {
	t.Helper()
	k := kinds[gvk]
	obj := kubeInternal(t, gvk, js)
	k.strategy.PrepareForCreate(t.Context(), obj)
	return kubeErrors(declaratively(t, gvk, obj, nil, k.strategy.Validate(t.Context(), obj)))
}

// kubeUpdateCauses runs kube's strategy on an update from the object old
// to js, as kube-apiserver does: PrepareForUpdate, ValidateUpdate, and
// declarative validation.
func kubeUpdateCauses(t *testing.T, gvk schema.GroupVersionKind, js, old []byte) []cause {
	t.Helper()
	obj, was := kubeInternal(t, gvk, js), kubeInternal(t, gvk, old)
	kinds[gvk].strategy.PrepareForUpdate(t.Context(), obj, was)
	return kubeErrors(declaratively(t, gvk, obj, was, kinds[gvk].strategy.ValidateUpdate(t.Context(), obj, was)))
}

// declaratively adds to errs what kube's declarative validation of obj
// (an update from old, when not nil) adds, and takes away what it takes
// away, for kinds whose strategy has it, as rest.ValidateCreate and
// rest.ValidateUpdate run it.
func declaratively(t *testing.T, gvk schema.GroupVersionKind, obj, old runtime.Object, errs field.ErrorList) field.ErrorList {
	return declarativelyAs(t, gvk, kinds[gvk].plural, kinds[gvk].strategy, "", obj, old, errs)
}

// declarativelyAs is declaratively by strategy, for a write through the
// subresource sub ("": none).
func declarativelyAs(t *testing.T, gvk schema.GroupVersionKind, plural string, strategy any, sub string, obj, old runtime.Object, errs field.ErrorList) field.ErrorList {
	dv, ok := strategy.(rest.DeclarativeValidationStrategy)
	if !ok {
		return errs
	}
	verb, op := "create", operation.Create
	if old != nil {
		verb, op = "update", operation.Update
	}
	ctx := request.WithRequestInfo(t.Context(), &request.RequestInfo{
		IsResourceRequest: true, Verb: verb, APIGroup: gvk.Group, APIVersion: gvk.Version, Resource: plural, Subresource: sub,
	})
	return dv.ValidateDeclaratively(ctx, obj, old, errs, op, dv.DeclarativeValidationConfig(ctx, obj, old))
}

// kindNameRules are the messages of the rules some kinds add to
// metadata.name, which ours replicate.
var kindNameRules = []string{"will not able to create pod with invalid DNS label", "must be no more than 52 characters"}

// metadataCause says whether e is one of the metadata checks left out.
func metadataCause(e *field.Error) bool {
	if e.Field == "metadata.name" && slices.ContainsFunc(kindNameRules, func(m string) bool { return strings.Contains(e.Detail, m) }) {
		return false
	}
	return strings.HasPrefix(e.Field, "metadata.")
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
		if !metadataCause(e) && !(allocated[e.Field] && e.Type == field.ErrorTypeRequired) {
			out = append(out, comparable(cause{e.Field, string(e.Type), e.ErrorBody()}))
		}
	}
	return sorted(out)
}

// comparable is c less what ours does not reproduce: the lines after
// the first (kube's go-cmp diff of a refused Pod or claim update), and a
// Job's template or a StatefulSet's claim templates as the bad value of
// "field is immutable" (kube renders its internal Go types as JSON).
func comparable(c cause) cause {
	c.Message, _, _ = strings.Cut(c.Message, "\n")
	if internallyRendered[c.Field] && strings.HasSuffix(c.Message, ": field is immutable") {
		c.Message = "Invalid value: <" + c.Field + ">: field is immutable"
	}
	return c
}

var internallyRendered = map[string]bool{"spec.template": true, "spec.template.spec": true, "spec.volumeClaimTemplates": true}

// ourCauses runs our pruning, defaulting, preparation and validation on
// js, as the server creates it.
func ourCauses(t *testing.T, gvk schema.GroupVersionKind, js []byte) []cause {
	t.Helper()
	r := ours[gvk.Group+"/"+gvk.Version+"/"+kinds[gvk].plural]
	obj := ourObject(t, r, js)
	if r.Prepare != nil {
		r.Prepare(obj, nil)
	}
	var cs []api.StatusCause
	if r.Validate != nil {
		cs = r.Validate(obj)
	}
	if r.ValidateCreate != nil {
		cs = append(cs, r.ValidateCreate(t.Context(), obj)...)
	}
	return ourErrors(cs)
}

// ourUpdateCauses runs our preparation and validation of an update from
// old to js.
func ourUpdateCauses(t *testing.T, gvk schema.GroupVersionKind, js, old []byte) []cause {
	t.Helper()
	r := ours[gvk.Group+"/"+gvk.Version+"/"+kinds[gvk].plural]
	obj, was := ourObject(t, r, js), ourObject(t, r, old)
	if r.Prepare != nil {
		r.Prepare(obj, was)
	}
	var cs []api.StatusCause
	if r.Validate != nil {
		cs = r.Validate(obj)
	}
	if r.ValidateUpdate != nil {
		cs = append(cs, r.ValidateUpdate(t.Context(), obj, was)...)
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
// (see its README), each given the namespace and uid the server would.
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
		md["uid"] = "6f1c2a8e-0d4b-4c1e-9a57-2b8d3e4f5a60"
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
	r := ours[gvk.Group+"/"+gvk.Version+"/"+kinds[gvk].plural]
	return r.Validate != nil || r.ValidateCreate != nil
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
	"resize policies": func(s map[string]any) {
		rp := func(name, policy string) map[string]any {
			return map[string]any{"resourceName": name, "restartPolicy": policy}
		}
		container(s)["resizePolicy"] = []any{rp("cpu", "NotRequired"), rp("cpu", "Sometimes"), rp("gpu", "RestartContainer"), rp("", "NotRequired")}
	},
	"resize policy of a pod never restarted": func(s map[string]any) {
		s["restartPolicy"] = "Never"
		container(s)["resizePolicy"] = []any{map[string]any{"resourceName": "memory", "restartPolicy": "RestartContainer"}}
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
	"selector by bad expressions": setSpec("selector", map[string]any{"matchExpressions": []any{
		map[string]any{"key": "bad key", "operator": "In"},
		map[string]any{"key": "a", "operator": "Exists", "values": []any{"x"}},
	}}),
	"selector operator unknown": setSpec("selector", map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Near", "values": []any{"x"}}}}),
	"selector labels invalid":   setSpec("selector", map[string]any{"matchLabels": map[string]any{"bad key!": "bad value!"}}),
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
	"selector missing":       func(o map[string]any) { delete(spec(o), "selector") },
	"rollingUpdate both set": setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 1, "maxSurge": "10%"}}),
	"rollingUpdate both 0":   setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "0%", "maxSurge": 0}}),
	"rollingUpdate values": setSpec("updateStrategy", map[string]any{
		"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "150%", "maxSurge": "x5"},
	}),
	"rollingUpdate negative": setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": -1, "maxSurge": -2}}),
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
	"type unknown":    setSpec("type", "Everywhere"),
	"sessionAffinity": setSpec("sessionAffinity", "Sticky"),
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
	"volumeMode unknown":       setSpec("volumeMode", "Raw"),
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
	"rollingUpdate both 0":          setSpec("strategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 0, "maxSurge": "0%"}}),
	"rollingUpdate values": setSpec("strategy", map[string]any{
		"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "150%", "maxSurge": "abc"},
	}),
	"rollingUpdate negative":           setSpec("strategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": -1, "maxSurge": -2}}),
	"rollingUpdate numbers as strings": setSpec("strategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "5", "maxSurge": "200%"}}),
}

// statefulSetMutations each break one rule of a StatefulSet only.
var statefulSetMutations = map[string]func(obj map[string]any){
	"podManagementPolicy unknown": setSpec("podManagementPolicy", "Sometimes"),
	"updateStrategy unknown":      setSpec("updateStrategy", map[string]any{"type": "Blue", "rollingUpdate": map[string]any{"partition": 1}}),
	"updateStrategy OnDelete with rollingUpdate": setSpec("updateStrategy", map[string]any{
		"type": "OnDelete", "rollingUpdate": map[string]any{"partition": 2, "maxUnavailable": "10%"},
	}),
	"rollingUpdate partition and maxUnavailable": setSpec("updateStrategy", map[string]any{
		"type": "RollingUpdate", "rollingUpdate": map[string]any{"partition": -1, "maxUnavailable": "150%"},
	}),
	"maxUnavailable 0":             setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": 0}}),
	"maxUnavailable 0%":            setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "0%"}}),
	"maxUnavailable not a percent": setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "abc"}}),
	"maxUnavailable number string": setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": "50"}}),
	"maxUnavailable negative":      setSpec("updateStrategy", map[string]any{"type": "RollingUpdate", "rollingUpdate": map[string]any{"maxUnavailable": -1}}),
	"retention policy unknown":     setSpec("persistentVolumeClaimRetentionPolicy", map[string]any{"whenDeleted": "Keep", "whenScaled": "Delete"}),
	"ordinals negative":            setSpec("ordinals", map[string]any{"start": -1}),
	"serviceName not a DNS label":  setSpec("serviceName", "Bad_Service"),
	"template labels invalid": func(o map[string]any) {
		at(o, "spec", "template", "metadata", "labels")["bad key!"] = "v"
	},
	"claim template invalid": func(o map[string]any) {
		spec(o)["volumeClaimTemplates"] = append(list(spec(o), "volumeClaimTemplates"), map[string]any{
			"metadata": map[string]any{"name": "extra"},
			"spec":     map[string]any{"accessModes": []any{"ReadWriteSometimes"}, "resources": map[string]any{"requests": map[string]any{"storage": "0"}}},
		})
	},
	"mounts of a claim template and of nothing": func(o map[string]any) {
		spec(o)["volumeClaimTemplates"] = append(list(spec(o), "volumeClaimTemplates"), map[string]any{
			"metadata": map[string]any{"name": "claimed"},
			"spec":     map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}},
		})
		s := at(o, "spec", "template", "spec")
		addMount(s, map[string]any{"name": "claimed", "mountPath": "/claimed"})
		addMount(s, map[string]any{"name": "nothing", "mountPath": "/nothing"})
	},
	"template volume after the claims' invalid": func(o map[string]any) {
		addVolume(at(o, "spec", "template", "spec"), "Bad_Vol")
	},
}

// jobSpecMutations each break one rule of a Job's spec, which a CronJob's
// jobTemplate shares.
var jobSpecMutations = map[string]func(spec map[string]any){
	"counts negative": func(s map[string]any) {
		for _, f := range []string{"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"} {
			s[f] = -1
		}
	},
	"maxFailedIndexes without backoffLimitPerIndex": func(s map[string]any) {
		delete(s, "backoffLimitPerIndex")
		s["maxFailedIndexes"] = 2
	},
	"backoffLimitPerIndex not Indexed": func(s map[string]any) {
		s["completionMode"] = "NonIndexed"
		s["backoffLimitPerIndex"] = 1
	},
	"completionMode unknown":               func(s map[string]any) { s["completionMode"] = "Sometimes" },
	"managedBy not a domain-prefixed path": func(s map[string]any) { s["managedBy"] = "queue" },
	"managedBy of a bad domain and path":   func(s map[string]any) { s["managedBy"] = "Bad_Domain/a b" },
	"managedBy empty":                      func(s map[string]any) { s["managedBy"] = "" },
	"managedBy too long":                   func(s map[string]any) { s["managedBy"] = "example.com/" + strings.Repeat("q", 60) },
	"Indexed without completions": func(s map[string]any) {
		s["completionMode"] = "Indexed"
		delete(s, "completions")
		s["parallelism"] = 100001
	},
	"Indexed maxFailedIndexes above completions": func(s map[string]any) {
		s["completionMode"] = "Indexed"
		s["completions"], s["backoffLimitPerIndex"], s["maxFailedIndexes"] = 3, 1, 5
	},
	"Indexed many completions": func(s map[string]any) {
		s["completionMode"] = "Indexed"
		s["completions"], s["backoffLimitPerIndex"], s["parallelism"] = 100001, 1, 10001
		delete(s, "maxFailedIndexes")
	},
	"Indexed many completions and failed indexes": func(s map[string]any) {
		s["completionMode"] = "Indexed"
		s["completions"], s["backoffLimitPerIndex"], s["maxFailedIndexes"] = 200000, 1, 100001
	},
	"podFailurePolicy rules": func(s map[string]any) {
		delete(s, "backoffLimitPerIndex")
		s["podFailurePolicy"] = map[string]any{"rules": []any{
			map[string]any{"action": "FailIndex", "onExitCodes": map[string]any{"operator": "In", "values": []any{0, 3, 3, 1}, "containerName": "nope"}},
			map[string]any{"action": "Explode", "onPodConditions": []any{map[string]any{"type": "Bad Type", "status": "Maybe"}}},
			map[string]any{"action": "Ignore"},
			map[string]any{"action": "Count", "onExitCodes": map[string]any{"operator": "Between", "values": []any{}}, "onPodConditions": []any{map[string]any{"type": "DisruptionTarget"}}},
			map[string]any{"onExitCodes": map[string]any{"values": []any{1}}},
		}}
		at(s, "template", "spec")["restartPolicy"] = "OnFailure"
	},
	"podFailurePolicy too many rules": func(s map[string]any) {
		rule := map[string]any{"action": "Ignore", "onPodConditions": []any{map[string]any{"type": "DisruptionTarget"}}}
		var rules []any
		for range 21 {
			rules = append(rules, rule)
		}
		s["podFailurePolicy"] = map[string]any{"rules": rules}
		at(s, "template", "spec")["restartPolicy"] = "Never"
		delete(s, "podReplacementPolicy")
	},
	"podReplacementPolicy with podFailurePolicy": func(s map[string]any) {
		s["podFailurePolicy"] = map[string]any{"rules": []any{map[string]any{"action": "FailJob", "onExitCodes": map[string]any{"operator": "NotIn", "values": []any{0}}}}}
		s["podReplacementPolicy"] = "TerminatingOrFailed"
		at(s, "template", "spec")["restartPolicy"] = "Never"
	},
	"podReplacementPolicy unknown": func(s map[string]any) {
		delete(s, "podFailurePolicy")
		s["podReplacementPolicy"] = "Never"
	},
	"successPolicy not Indexed": func(s map[string]any) {
		s["completionMode"] = "NonIndexed"
		delete(s, "backoffLimitPerIndex")
		delete(s, "maxFailedIndexes")
		s["successPolicy"] = map[string]any{"rules": []any{map[string]any{"succeededIndexes": "0-2", "succeededCount": 1}, map[string]any{}}}
	},
	"successPolicy rules": func(s map[string]any) {
		s["completionMode"] = "Indexed"
		s["completions"] = 5
		s["successPolicy"] = map[string]any{"rules": []any{
			map[string]any{},
			map[string]any{"succeededIndexes": "3-1"},
			map[string]any{"succeededIndexes": "0,2-3", "succeededCount": 4},
			map[string]any{"succeededCount": 6},
			map[string]any{"succeededIndexes": "9"},
			map[string]any{"succeededIndexes": "a"},
			map[string]any{"succeededIndexes": "1-2-3"},
			map[string]any{"succeededIndexes": "1,1", "succeededCount": -1},
		}}
	},
	"successPolicy without rules": func(s map[string]any) {
		s["completionMode"] = "Indexed"
		s["completions"] = 2
		s["successPolicy"] = map[string]any{"rules": []any{}}
	},
	"template restartPolicy Always": func(s map[string]any) { at(s, "template", "spec")["restartPolicy"] = "Always" },
	"template restartPolicy OnFailure with podFailurePolicy": func(s map[string]any) {
		s["podFailurePolicy"] = map[string]any{"rules": []any{map[string]any{"action": "Ignore", "onPodConditions": []any{map[string]any{"type": "DisruptionTarget"}}}}}
		delete(s, "podReplacementPolicy")
		at(s, "template", "spec")["restartPolicy"] = "OnFailure"
	},
}

// jobMutations each break one rule of a Job only.
var jobMutations = map[string]func(obj map[string]any){
	"manual selector by bad expressions": func(o map[string]any) {
		spec(o)["manualSelector"] = true
		spec(o)["selector"] = map[string]any{"matchExpressions": []any{
			map[string]any{"key": "bad key", "operator": "In"},
			map[string]any{"key": "a", "operator": "Exists", "values": []any{"x"}},
			map[string]any{"key": "b", "operator": "Maybe", "values": []any{"bad value!"}},
		}}
	},
	"manual selector missing": func(o map[string]any) {
		spec(o)["manualSelector"] = true
		delete(spec(o), "selector")
	},
	"selector not generated": func(o map[string]any) {
		spec(o)["selector"] = map[string]any{"matchLabels": map[string]any{"other": "x", "bad key!": "v"}}
	},
	"template label of another job": func(o map[string]any) {
		at(o, "spec", "template", "metadata", "labels")["job-name"] = "other"
		at(o, "spec", "template", "metadata", "labels")["batch.kubernetes.io/controller-uid"] = "other"
	},
	"name too long for its indexes": func(o map[string]any) {
		at(o, "metadata")["name"] = strings.Repeat("n", 60)
		spec(o)["completionMode"] = "Indexed"
		spec(o)["completions"] = 1000
		spec(o)["parallelism"] = 1
		delete(spec(o), "successPolicy")
	},
}

// cronJobMutations each break one rule of a CronJob.
var cronJobMutations = map[string]func(obj map[string]any){
	"schedule missing":          func(o map[string]any) { delete(spec(o), "schedule") },
	"schedule out of range":     setSpec("schedule", "61 * * * *"),
	"schedule of 3 fields":      setSpec("schedule", "* * *"),
	"schedule descriptor":       setSpec("schedule", "@fortnightly"),
	"schedule every":            setSpec("schedule", "@every 1x"),
	"schedule with time zone":   setSpec("schedule", "CRON_TZ=UTC 0 * * * *"),
	"schedule TZ=0":             setSpec("schedule", "TZ=0"),
	"schedule step 0":           setSpec("schedule", "*/0 * * * *"),
	"schedule names":            setSpec("schedule", "0 0 * JANX MON-FOO"),
	"timeZone unknown":          setSpec("timeZone", "Mars/Olympus_Mons"),
	"timeZone Local":            setSpec("timeZone", "Local"),
	"timeZone empty":            setSpec("timeZone", ""),
	"timeZone path":             setSpec("timeZone", "../etc/passwd"),
	"concurrencyPolicy unknown": setSpec("concurrencyPolicy", "Sometimes"),
	"limits negative": func(o map[string]any) {
		for _, f := range []string{"startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"} {
			spec(o)[f] = -1
		}
	},
	"jobTemplate selector": func(o map[string]any) {
		js := at(o, "spec", "jobTemplate", "spec")
		js["selector"] = map[string]any{"matchLabels": map[string]any{"a": "b"}}
		js["manualSelector"] = true
	},
	"name too long": func(o map[string]any) { at(o, "metadata")["name"] = strings.Repeat("c", 53) },
}

// TestMutations breaks each real manifest of a validated kind in each way
// that applies to it and validates the copy both ways.
func TestMutations(t *testing.T) {
	n := 0
	for _, m := range readManifests(t) {
		if !createValidated(m.gvk) {
			continue
		}
		eachMutation(m, func(name string, mutate func(map[string]any)) {
			obj := deepCopy(m.obj).(map[string]any)
			mutate(obj)
			n++
			t.Run(m.name+"/"+name, func(t *testing.T) {
				if kube := compare(t, m.gvk, encode(t, obj)); len(kube) == 0 {
					t.Error("the mutation breaks no rule of kube's")
				}
			})
		})
	}
	if n < 2000 {
		t.Fatalf("%d mutated objects, want at least 2000", n)
	}
}

// eachMutation calls run with each mutation that applies to m's kind.
func eachMutation(m manifest, run func(name string, mutate func(map[string]any))) {
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
	jobSpecAt := map[string][]string{"Job": {"spec"}, "CronJob": {"spec", "jobTemplate", "spec"}}
	if js, ok := jobSpecAt[m.gvk.Kind]; ok {
		for name, mutate := range jobSpecMutations {
			run(name, func(obj map[string]any) { mutate(at(obj, js...)) })
		}
	}
	byKind := map[string][]map[string]func(map[string]any){
		"Deployment":  {replicasMutations, deploymentMutations},
		"ReplicaSet":  {replicasMutations},
		"DaemonSet":   {daemonSetMutations},
		"StatefulSet": {replicasMutations, statefulSetMutations},

		"ReplicationController": {replicationControllerMutations},
		"Service":               {serviceMutations},
		"PersistentVolumeClaim": {claimMutations},
		"ConfigMap":             {dataMutations, configMapMutations},
		"Secret":                {dataMutations},
		"Job":                   {jobMutations},
		"CronJob":               {cronJobMutations},
		"Ingress":               {ingressMutations},
		"NetworkPolicy":         {networkPolicyMutations},
	}
	for _, mutations := range byKind[m.gvk.Kind] {
		for name, mutate := range mutations {
			run(name, mutate)
		}
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

func spec(o map[string]any) map[string]any { return at(o, "spec") }

// setSpec is the mutation that sets spec.field to v.
func setSpec(field string, v any) func(map[string]any) {
	return func(o map[string]any) { spec(o)[field] = v }
}
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
