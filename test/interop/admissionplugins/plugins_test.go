// Package admissionplugins proves that the pods, claims, volumes,
// ingresses and nodes a listwatch binary stores are those kube-apiserver's built-in
// admission plugins make of the same input (ServiceAccount,
// TaintNodesByCondition, Priority, DefaultTolerationSeconds,
// DefaultStorageClass, StorageObjectInUseProtection,
// PersistentVolumeClaimResize, RuntimeClass, DefaultIngressClass and
// PodTopologyLabels, in kube's order), by running kube's own plugins (k8s.io/kubernetes
// plugin/pkg/admission) with listers fed the accounts and classes the
// binary stores, and that what they refuse the binary refuses with the
// same message; that PodSecurity refuses and warns of the same pods,
// templates and namespace changes with the same messages; and that
// LimitRanger defaults and refuses the same pods and claims; and that
// ResourceQuota charges and refuses writes as kube's CheckRequest.
package admissionplugins

import (
	"context"
	"encoding/json"
	"io"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	networkingv1beta1 "k8s.io/api/networking/v1beta1"
	nodev1 "k8s.io/api/node/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/admission"
	genericinitializer "k8s.io/apiserver/pkg/admission/initializer"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"
	"k8s.io/utils/ptr"

	"github.com/listwatch/listwatch/test/interop"
)

const ns = "apps"

// The accounts and classes both sides know, besides the namespace's
// default account and the system's classes.
var (
	accounts = []*corev1.ServiceAccount{
		{ObjectMeta: metav1.ObjectMeta{Name: "puller"}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}, {Name: "mirror"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "nomount"}, AutomountServiceAccountToken: ptr.To(false)},
		{ObjectMeta: metav1.ObjectMeta{Name: "strict", Annotations: map[string]string{serviceaccount.EnforceMountableSecretsAnnotation: "true"}},
			Secrets: []corev1.ObjectReference{{Name: "allowed"}}},
	}
	classes = []*schedulingv1.PriorityClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
		{ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: -5},
	}
	runtimeClasses = []*nodev1.RuntimeClass{
		{ObjectMeta: metav1.ObjectMeta{Name: "kata"}, Handler: "kata",
			Overhead: &nodev1.Overhead{PodFixed: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")}},
			Scheduling: &nodev1.Scheduling{NodeSelector: map[string]string{"runtime": "kata"}, Tolerations: []corev1.Toleration{
				{Key: "kata", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
				{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](100)},
				{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](900)}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "runc"}, Handler: "runc"},
	}
)

// cases are pods to create, as JSON, with a name each.
var cases = []struct{ name, pod string }{
	{"minimal", `{"spec":{"containers":[{"name":"c","image":"nginx"}]}}`},
	{"init-and-mounted", `{"spec":{"initContainers":[{"name":"i","image":"busybox"}],"containers":[
		{"name":"a","image":"nginx","volumeMounts":[{"name":"own","mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"}]},
		{"name":"b","image":"nginx","volumeMounts":[{"name":"own","mountPath":"/data"}]}],"volumes":[{"name":"own","emptyDir":{}}]}}`},
	{"puller", `{"spec":{"serviceAccountName":"puller","containers":[{"name":"c","image":"nginx"}]}}`},
	{"own-pull-secrets", `{"spec":{"serviceAccountName":"puller","imagePullSecrets":[{"name":"mine"}],"containers":[{"name":"c","image":"nginx"}]}}`},
	{"account-no-automount", `{"spec":{"serviceAccountName":"nomount","containers":[{"name":"c","image":"nginx"}]}}`},
	{"pod-automount-wins", `{"spec":{"serviceAccountName":"nomount","automountServiceAccountToken":true,"containers":[{"name":"c","image":"nginx"}]}}`},
	{"pod-no-automount", `{"spec":{"automountServiceAccountToken":false,"containers":[{"name":"c","image":"nginx"}]}}`},
	{"deprecated-alias", `{"spec":{"serviceAccount":"puller","containers":[{"name":"c","image":"nginx"}]}}`},
	{"own-token-volume", `{"spec":{"containers":[{"name":"c","image":"nginx","volumeMounts":[{"name":"kube-api-access-own","mountPath":"/x"}]}],
		"volumes":[{"name":"kube-api-access-own","emptyDir":{}}]}}`},
	{"tolerations", `{"spec":{"containers":[{"name":"c","image":"nginx"}],"tolerations":[
		{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":10},
		{"key":"gpu","operator":"Equal","value":"yes","effect":"NoSchedule"}]}}`},
	{"tolerate-everything", `{"spec":{"containers":[{"name":"c","image":"nginx"}],"tolerations":[{"operator":"Exists"}]}}`},
	{"tolerate-unreachable-any-effect", `{"spec":{"containers":[{"name":"c","image":"nginx"}],"tolerations":[{"key":"node.kubernetes.io/unreachable","operator":"Exists"}]}}`},
	{"class", `{"spec":{"priorityClassName":"high","containers":[{"name":"c","image":"nginx"}]}}`},
	{"class-default-policy", `{"spec":{"priorityClassName":"batch","containers":[{"name":"c","image":"nginx"}]}}`},
	{"system-class", `{"spec":{"priorityClassName":"system-cluster-critical","containers":[{"name":"c","image":"nginx"}]}}`},
	{"same-priority-given", `{"spec":{"priorityClassName":"high","priority":1000,"preemptionPolicy":"Never","containers":[{"name":"c","image":"nginx"}]}}`},
	{"strict-allowed", `{"spec":{"serviceAccountName":"strict","containers":[{"name":"c","image":"nginx",
		"env":[{"name":"E","valueFrom":{"secretKeyRef":{"name":"allowed","key":"k"}}}]}],"volumes":[{"name":"s","secret":{"secretName":"allowed"}}]}}`},
	// Refused:
	{"missing-account", `{"spec":{"serviceAccountName":"nope","containers":[{"name":"c","image":"nginx"}]}}`},
	{"missing-class", `{"spec":{"priorityClassName":"nope","containers":[{"name":"c","image":"nginx"}]}}`},
	{"other-priority-given", `{"spec":{"priorityClassName":"high","priority":3,"containers":[{"name":"c","image":"nginx"}]}}`},
	{"other-policy-given", `{"spec":{"preemptionPolicy":"Never","containers":[{"name":"c","image":"nginx"}]}}`},
	{"strict-volume", `{"spec":{"serviceAccountName":"strict","containers":[{"name":"c","image":"nginx"}],"volumes":[{"name":"s","secret":{"secretName":"other"}}]}}`},
	{"strict-init-env", `{"spec":{"serviceAccountName":"strict","initContainers":[{"name":"i","image":"busybox",
		"env":[{"name":"E","valueFrom":{"secretKeyRef":{"name":"other","key":"k"}}}]}],"containers":[{"name":"c","image":"nginx"}]}}`},
	{"strict-env-from", `{"spec":{"serviceAccountName":"strict","containers":[{"name":"c","image":"nginx","envFrom":[{"secretRef":{"name":"other"}}]}]}}`},
	{"strict-pull-secret", `{"spec":{"serviceAccountName":"strict","imagePullSecrets":[{"name":"p"}],"containers":[{"name":"c","image":"nginx"}]}}`},
	{"runtime-class", `{"spec":{"runtimeClassName":"kata","nodeSelector":{"zone":"a"},"containers":[{"name":"c","image":"nginx"}]}}`},
	{"runtime-class-own-overhead", `{"spec":{"runtimeClassName":"kata","overhead":{"cpu":"0.25","memory":"64Mi"},"containers":[{"name":"c","image":"nginx"}]}}`},
	{"runtime-class-tolerations", `{"spec":{"runtimeClassName":"kata","containers":[{"name":"c","image":"nginx"}],"tolerations":[
		{"key":"kata","operator":"Exists"},
		{"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":100},
		{"key":"node.kubernetes.io/unreachable","operator":"Exists","effect":"NoExecute","tolerationSeconds":60},
		{"key":"gpu","operator":"Equal","value":"a","effect":"NoSchedule"},{"key":"gpu","operator":"Exists","effect":"NoSchedule"},
		{"key":"gpu","operator":"Exists","effect":"NoSchedule","tolerationSeconds":5}]}}`},
	{"runtime-class-plain", `{"spec":{"runtimeClassName":"runc","containers":[{"name":"c","image":"nginx"}]}}`},
	{"runtime-class-other-overhead", `{"spec":{"runtimeClassName":"kata","overhead":{"cpu":"1"},"containers":[{"name":"c","image":"nginx"}]}}`},
	{"overhead-without-class", `{"spec":{"overhead":{"cpu":"1"},"containers":[{"name":"c","image":"nginx"}]}}`},
	{"runtime-selector-conflict", `{"spec":{"runtimeClassName":"kata","nodeSelector":{"runtime":"runc"},"containers":[{"name":"c","image":"nginx"}]}}`},
	{"runtime-class-missing", `{"spec":{"runtimeClassName":"gvisor","containers":[{"name":"c","image":"nginx"}]}}`},
	{"mirror-with-account", `{"metadata":{"annotations":{"kubernetes.io/config.mirror":"x"}},"spec":{"serviceAccountName":"puller","containers":[{"name":"c","image":"nginx"}]}}`},
}

// TestPodsAsKubesPlugins creates each case's pod on the binary with
// client-go and compares the stored spec, or the refusal's code and
// message, with what kube's plugins make of the same pod.
func TestPodsAsKubesPlugins(t *testing.T) {
	cs := start(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var pod corev1.Pod
			if err := json.Unmarshal([]byte(tc.pod), &pod); err != nil {
				t.Fatal(err)
			}
			pod.Name = tc.name
			compare(t, cs, &pod, cs.CoreV1().Pods(ns), func(o *corev1.Pod) any { return o.Spec })
		})
	}
	// A default class, once the server's cache has it, gives its priority
	// to a pod that names none, and forbids another default.
	def := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "everyday"}, Value: 7, GlobalDefault: true}
	createCached(t, cs.SchedulingV1().PriorityClasses(), def)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "global-default"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
	compare(t, cs, pod, cs.CoreV1().Pods(ns), func(o *corev1.Pod) any { return o.Spec })
	second := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "second"}, Value: 1, GlobalDefault: true}
	_, err := cs.SchedulingV1().PriorityClasses().Create(t.Context(), second, metav1.CreateOptions{})
	want := `priorityclasses.scheduling.k8s.io "second" is forbidden: PriorityClass everyday is already marked as default. Only one default can exist`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("a second default: %v, want %q", err, want)
	}
}

// TestDefaultClassesAsKubesPlugins creates claims and ingresses with and
// without a class on the binary, with default classes, and compares the
// stored specs with what kube's DefaultStorageClass and
// DefaultIngressClass make of them.
func TestDefaultClassesAsKubesPlugins(t *testing.T) {
	cs := start(t)
	claims := cs.CoreV1().PersistentVolumeClaims(ns)
	claim := func(name, class, annotation string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
		if class != "-" {
			c.Spec.StorageClassName = &class
		}
		if annotation != "" {
			c.Annotations = map[string]string{corev1.BetaStorageClassAnnotation: annotation}
		}
		return c
	}
	ingresses := cs.NetworkingV1().Ingresses(ns)
	ingress := func(name string, class *string, annotation string) *networkingv1.Ingress {
		i := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IngressSpec{IngressClassName: class,
			DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
		if annotation != "" {
			i.Annotations = map[string]string{networkingv1beta1.AnnotationIngressClass: annotation}
		}
		return i
	}
	claimSpec := func(c *corev1.PersistentVolumeClaim) any { return c.Spec }
	ingressSpec := func(i *networkingv1.Ingress) any { return i.Spec }
	compare(t, cs, claim("no-default-yet", "-", ""), claims, claimSpec)
	compare(t, cs, ingress("no-default-yet", nil, ""), ingresses, ingressSpec)
	isDefault := map[string]string{volumeutil.IsDefaultStorageClassAnnotation: "true"}
	createCached(t, cs.StorageV1().StorageClasses(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast", Annotations: isDefault}, Provisioner: "example.com/p"})
	createCached(t, cs.StorageV1().StorageClasses(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "slow", Annotations: map[string]string{
		volumeutil.BetaIsDefaultStorageClassAnnotation: "true"}}, Provisioner: "example.com/p"})
	createCached(t, cs.NetworkingV1().IngressClasses(), &networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "nginx",
		Annotations: map[string]string{networkingv1.AnnotationIsDefaultIngressClass: "true"}}, Spec: networkingv1.IngressClassSpec{Controller: "example.com/c"}})
	compare(t, cs, claim("defaulted", "-", ""), claims, claimSpec)
	compare(t, cs, claim("no-class", "", ""), claims, claimSpec)
	compare(t, cs, claim("annotated", "-", "slow"), claims, claimSpec)
	compare(t, cs, claim("named", "slow", ""), claims, claimSpec)
	compare(t, cs, ingress("defaulted", nil, ""), ingresses, ingressSpec)
	compare(t, cs, ingress("named", ptr.To("other"), ""), ingresses, ingressSpec)
	compare(t, cs, ingress("annotated", nil, "other"), ingresses, ingressSpec)
}

// TestNodesAsKubesPlugin creates nodes on the binary and compares their
// taints with what kube's TaintNodesByCondition makes of them.
func TestNodesAsKubesPlugin(t *testing.T) {
	cs := start(t)
	nodeSpec := func(n *corev1.Node) any { return n.Spec }
	for name, taints := range map[string][]corev1.Taint{
		"bare":       nil,
		"not-ready":  {{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoSchedule}},
		"no-execute": {{Key: "node.kubernetes.io/not-ready", Effect: corev1.TaintEffectNoExecute}, {Key: "gpu", Value: "a", Effect: corev1.TaintEffectNoSchedule}},
	} {
		compare(t, cs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Taints: taints}}, cs.CoreV1().Nodes(), nodeSpec)
	}
}

// start runs the binary with the cases' namespace, accounts and classes.
func start(t *testing.T) kubernetes.Interface {
	cs, _ := startAt(t)
	return cs
}

// startAt is start, and the binary's URL.
func startAt(t *testing.T) (kubernetes.Interface, string) {
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, sa := range accounts {
		if _, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, pc := range classes {
		if _, err := cs.SchedulingV1().PriorityClasses().Create(ctx, pc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, rc := range runtimeClasses {
		if _, err := cs.NodeV1().RuntimeClasses().Create(ctx, rc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return cs, lw.URL
}

// watchable is a client of cluster-scoped T.
type watchable[T runtime.Object] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Watch(context.Context, metav1.ListOptions) (watch.Interface, error)
}

// createCached creates obj and waits until the server's watch cache of its
// kind has it: the plugins read their classes from it.
func createCached[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, c watchable[T], obj T) {
	t.Helper()
	w, err := c.Watch(t.Context(), metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", obj.GetName()).String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := c.Create(t.Context(), obj, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for ev := range w.ResultChan() {
		if ev.Type == watch.Added {
			return
		}
	}
	t.Fatalf("%s not seen on its watch", obj.GetName())
}

// creator is the client of namespaced T.
type creator[T any] interface {
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Get(context.Context, string, metav1.GetOptions) (T, error)
}

// compare creates obj on the binary and through kube's plugins, fed the
// accounts and classes the binary stores, and compares what spec returns
// of each, or the refusals.
func compare[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, cs kubernetes.Interface, obj T, c creator[T], spec func(T) any) {
	t.Helper()
	want, wantErr := kubeAdmit(t, cs, obj.DeepCopyObject().(T), nil)
	_, err := c.Create(t.Context(), obj, metav1.CreateOptions{})
	sameOutcome(t, c, obj.GetName(), want, wantErr, err, spec)
}

// updater is the client of namespaced T.
type updater[T any] interface {
	creator[T]
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// compareUpdate updates old, as the binary stores it, to obj on the binary
// and through kube's plugins, and compares as compare does.
func compareUpdate[T interface {
	runtime.Object
	GetName() string
}](t *testing.T, cs kubernetes.Interface, obj, old T, c updater[T], spec func(T) any) {
	t.Helper()
	want, wantErr := kubeAdmit(t, cs, obj.DeepCopyObject().(T), old.DeepCopyObject())
	_, err := c.Update(t.Context(), obj, metav1.UpdateOptions{})
	sameOutcome(t, c, obj.GetName(), want, wantErr, err, spec)
}

// sameOutcome checks that the binary's write of name, which answered err,
// refused it as kube's plugins did (wantErr), or stored what spec returns
// of kube's object want.
func sameOutcome[T runtime.Object](t *testing.T, c creator[T], name string, want runtime.Object, wantErr, err error, spec func(T) any) {
	t.Helper()
	if wantErr != nil {
		if err == nil || apierrors.ReasonForError(err) != apierrors.ReasonForError(wantErr) || err.Error() != wantErr.Error() {
			t.Fatalf("%s: got %v (%s), want %v (%s)", name, err, apierrors.ReasonForError(err), wantErr, apierrors.ReasonForError(wantErr))
		}
		return
	}
	if err != nil {
		t.Fatalf("%s: kube admits it, the binary: %v", name, err)
	}
	got, err := c.Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(generic(spec(want.(T))), generic(spec(got))); diff != "" {
		t.Errorf("%s: spec (-kube +listwatch):\n%s", name, diff)
	}
}

// generatedVolume is a token volume's name the plugin generated.
var generatedVolume = regexp.MustCompile(`"kube-api-access-[bcdfghjklmnpqrstvwxz2456789]{5}"`)

// generic is a spec's JSON with generated volume names made equal.
func generic(spec any) string {
	b, _ := json.MarshalIndent(spec, "", " ")
	return generatedVolume.ReplaceAllString(string(b), `"kube-api-access-*"`)
}

// kubeOrder is kube's order of the plugins (AllOrderedPlugins).
var kubeOrder = []string{serviceaccount.PluginName, nodetaint.PluginName, priority.PluginName, defaulttolerationseconds.PluginName,
	setdefault.PluginName, storageobjectinuseprotection.PluginName, resize.PluginName, runtimeclass.PluginName, defaultingressclass.PluginName,
	podtopologylabels.PluginName}

// initializer gives kube's plugins a fake client and informers holding
// objs, and the feature gates.
type initializer struct {
	client  kubernetes.Interface
	factory informers.SharedInformerFactory
}

func (i initializer) Initialize(p admission.Interface) {
	if w, ok := p.(genericinitializer.WantsExternalKubeClientSet); ok {
		w.SetExternalKubeClientSet(i.client)
	}
	if w, ok := p.(genericinitializer.WantsExternalKubeInformerFactory); ok {
		w.SetExternalKubeInformerFactory(i.factory)
	}
	if w, ok := p.(genericinitializer.WantsFeatures); ok {
		w.InspectFeatureGates(utilfeature.DefaultFeatureGate)
	}
}

type noConfig struct{}

func (noConfig) ConfigFor(string) (io.Reader, error) { return nil, nil }

// kubeAdmit runs the create of obj (of the v1 API), or its update of old
// when old is not nil, defaulted and converted as kube-apiserver decodes
// them, through kube's plugins, fed the accounts and classes the binary
// holds, mutating then validating, and returns obj as kube stores and
// reads it back (defaulted again).
func kubeAdmit(t *testing.T, cs kubernetes.Interface, obj, old runtime.Object) (runtime.Object, error) {
	t.Helper()
	return kubeAdmitTo(t, cs, obj, old, kindResource(t, obj), "")
}

// kubeAdmitTo is kubeAdmit of a write to the resource's subresource
// ("": the object itself).
func kubeAdmitTo(t *testing.T, cs kubernetes.Interface, obj, old runtime.Object, resource schema.GroupVersionResource, subresource string) (runtime.Object, error) {
	t.Helper()
	ctx := t.Context()
	var objs []runtime.Object
	add := func(list runtime.Object, err error) {
		if err != nil {
			t.Fatal(err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatal(err)
		}
		objs = append(objs, items...)
	}
	add(cs.CoreV1().ServiceAccounts(ns).List(ctx, metav1.ListOptions{}))
	add(cs.SchedulingV1().PriorityClasses().List(ctx, metav1.ListOptions{}))
	add(cs.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{}))
	add(cs.NetworkingV1().IngressClasses().List(ctx, metav1.ListOptions{}))
	add(cs.NodeV1().RuntimeClasses().List(ctx, metav1.ListOptions{}))
	add(cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{}))
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	plugins := admission.NewPlugins()
	serviceaccount.Register(plugins)
	nodetaint.Register(plugins)
	priority.Register(plugins)
	defaulttolerationseconds.Register(plugins)
	setdefault.Register(plugins)
	storageobjectinuseprotection.Register(plugins)
	resize.Register(plugins)
	runtimeclass.Register(plugins)
	defaultingressclass.Register(plugins)
	podtopologylabels.Register(plugins)
	chain, err := plugins.NewFromPlugins(kubeOrder, noConfig{}, initializer{client, factory}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The informers the plugins asked for, synced: PodTopologyLabels
	// waits for its own.
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	internal, gvk := decodeAsKube(t, obj)
	name := obj.(metav1.Object).GetName()
	namespace := ns
	if clusterKinds[gvk.Kind] {
		namespace = ""
	}
	op, opts, oldInternal := admission.Create, runtime.Object(&metav1.CreateOptions{}), runtime.Object(nil)
	if old != nil {
		op, opts = admission.Update, &metav1.UpdateOptions{}
		oldInternal, _ = decodeAsKube(t, old)
	}
	a := admission.NewAttributesRecord(internal, oldInternal, gvk, namespace, name, resource, subresource, op, opts, false, nil)
	if err := chain.(admission.MutationInterface).Admit(ctx, a, nil); err != nil {
		return nil, err
	}
	if err := chain.(admission.ValidationInterface).Validate(ctx, a, nil); err != nil {
		return nil, err
	}
	return readAsKube(t, internal, gvk), nil
}

// clusterKinds are the cluster-scoped kinds the tests admit.
var clusterKinds = map[string]bool{"Node": true, "PersistentVolume": true, "VolumeAttributesClass": true}

// decodeAsKube is obj (of the v1 API, unchanged) defaulted and converted
// to kube's internal form, as kube-apiserver decodes it, and its kind.
func decodeAsKube(t *testing.T, obj runtime.Object) (runtime.Object, schema.GroupVersionKind) {
	t.Helper()
	obj = obj.DeepCopyObject()
	gvk := kindOf(t, obj)
	legacyscheme.Scheme.Default(obj)
	internal, err := legacyscheme.Scheme.New(gvk.GroupKind().WithVersion(runtime.APIVersionInternal))
	if err != nil {
		t.Fatal(err)
	}
	if err := legacyscheme.Scheme.Convert(obj, internal, nil); err != nil {
		t.Fatal(err)
	}
	return internal, gvk
}

// readAsKube is an internal object as kube stores and reads it back in
// version gvk (defaulted again).
func readAsKube(t *testing.T, internal runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	t.Helper()
	out, err := legacyscheme.Scheme.New(gvk)
	if err != nil {
		t.Fatal(err)
	}
	if err := legacyscheme.Scheme.Convert(internal, out, nil); err != nil {
		t.Fatal(err)
	}
	legacyscheme.Scheme.Default(out)
	return out
}

// kindOf is a v1 object's group, version and kind.
func kindOf(t *testing.T, obj runtime.Object) schema.GroupVersionKind {
	gvks, _, err := legacyscheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	return gvks[0]
}

// kindResource is the resource of a v1 object's kind.
func kindResource(t *testing.T, obj runtime.Object) schema.GroupVersionResource {
	gvk := kindOf(t, obj)
	plural, _ := meta.UnsafeGuessKindToResource(gvk)
	return plural
}
