// Package strategies proves what listwatch does on a write of a built-in
// kind beyond defaulting equal to what kube-apiserver's registries do, by
// running kube's own code (k8s.io/kubernetes pkg/registry, and the
// apimachinery functions its ScaleREST calls) on the same inputs.
package strategies

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kubeapps "k8s.io/kubernetes/pkg/apis/apps"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	kubebatch "k8s.io/kubernetes/pkg/apis/batch"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	kubecore "k8s.io/kubernetes/pkg/apis/core"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	daemonsetstrategy "k8s.io/kubernetes/pkg/registry/apps/daemonset"
	deploymentstrategy "k8s.io/kubernetes/pkg/registry/apps/deployment"
	jobstrategy "k8s.io/kubernetes/pkg/registry/batch/job"
	leasestrategy "k8s.io/kubernetes/pkg/registry/coordination/lease"
	configmapstrategy "k8s.io/kubernetes/pkg/registry/core/configmap"
	eventstrategy "k8s.io/kubernetes/pkg/registry/core/event"
	limitrangestrategy "k8s.io/kubernetes/pkg/registry/core/limitrange"
	namespacestrategy "k8s.io/kubernetes/pkg/registry/core/namespace"
	podstrategy "k8s.io/kubernetes/pkg/registry/core/pod"
	secretstrategy "k8s.io/kubernetes/pkg/registry/core/secret"
	servicestrategy "k8s.io/kubernetes/pkg/registry/core/service"
	runtimeclassstrategy "k8s.io/kubernetes/pkg/registry/node/runtimeclass"
	rolestrategy "k8s.io/kubernetes/pkg/registry/rbac/role"
	storageclassstrategy "k8s.io/kubernetes/pkg/registry/storage/storageclass"
	"k8s.io/utils/ptr"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/defaulting"
	lwresource "github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/test/interop"
)

// quantities reach each branch of kube's QoS: zero, equal values written
// differently (1 and 1000m, 1Gi and 1024Mi), and unequal ones.
var quantities = []string{"0", "1", "1000m", "100m", "1Gi", "1024Mi", "512Mi", "2"}

// randomResources fills requests and limits of cpu, memory and a resource
// QoS ignores, each present or not.
func randomResources(r *rand.Rand) corev1.ResourceRequirements {
	list := func() corev1.ResourceList {
		if r.Intn(3) == 0 {
			return nil
		}
		l := corev1.ResourceList{}
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage} {
			if r.Intn(2) == 0 {
				l[name] = resource.MustParse(quantities[r.Intn(len(quantities))])
			}
		}
		return l
	}
	return corev1.ResourceRequirements{Requests: list(), Limits: list()}
}

// TestPodPrepareForCreate creates random pods both ways: kube's (its v1
// defaulting, conversion to the internal type, the pod strategy's
// PrepareForCreate, conversion back) and listwatch's (its defaulting, the
// status reset of a create, the pod Resource's Prepare), and compares the
// status each stores: phase, QoS class and the conditions of gated pods.
// Pod-level resources are left out: kube's DefaultPodLevelResources, which
// fills them in before the QoS is computed, is not replicated.
func TestPodPrepareForCreate(t *testing.T) {
	pods := interop.Builtin(t, "", "v1", "pods")
	r := rand.New(rand.NewSource(1))
	for i := range 500 {
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default"},
			Status:     corev1.PodStatus{Phase: corev1.PodRunning, QOSClass: corev1.PodQOSGuaranteed},
		}
		for n := range 1 + r.Intn(3) {
			c := corev1.Container{Name: fmt.Sprintf("c%d", n), Image: "nginx", Resources: randomResources(r)}
			if r.Intn(4) == 0 {
				pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
			} else {
				pod.Spec.Containers = append(pod.Spec.Containers, c)
			}
		}
		if r.Intn(4) == 0 {
			pod.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
		}
		js, err := json.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		want := kubeStatus(t, pod)
		got := ourStatus(t, pods, js)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pod %s: kube's status (-) and ours (+) differ:\n%s\n%s", pod.Name, diff, js)
		}
	}
}

// kubeStatus is the status kube-apiserver stores for a new pod.
func kubeStatus(t *testing.T, pod *corev1.Pod) corev1.PodStatus {
	t.Helper()
	v1 := pod.DeepCopy()
	legacyscheme.Scheme.Default(v1)
	var internal kubecore.Pod
	if err := legacyscheme.Scheme.Convert(v1, &internal, nil); err != nil {
		t.Fatal(err)
	}
	podstrategy.Strategy.PrepareForCreate(context.Background(), &internal)
	var out corev1.Pod
	if err := legacyscheme.Scheme.Convert(&internal, &out, nil); err != nil {
		t.Fatal(err)
	}
	return sameTimes(out.Status)
}

// ourStatus is the status listwatch stores for the pod js, as its create
// prepares it (registry initMeta: defaults, status reset, Prepare).
func ourStatus(t *testing.T, pods *lwresource.Resource, js []byte) corev1.PodStatus {
	t.Helper()
	obj, err := api.ParseObject(js)
	if err != nil {
		t.Fatal(err)
	}
	defaulting.For("", "v1", "Pod")(obj)
	obj["status"] = map[string]any{}
	pods.Prepare(obj, nil)
	b, err := api.MarshalObject(obj)
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.Pod
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return sameTimes(out.Status)
}

// sameTimes sets the conditions' transition times, the clock's, to one
// value, leaving a missing one missing.
func sameTimes(s corev1.PodStatus) corev1.PodStatus {
	for i, c := range s.Conditions {
		if !c.LastTransitionTime.IsZero() {
			s.Conditions[i].LastTransitionTime = metav1.Unix(1, 0)
		}
	}
	return s
}

// keys and values are label keys and values, prefixed or not, sorting in
// different orders than they are written.
var (
	keys   = []string{"app", "tier", "example.com/role", "a", "z-z", "app.kubernetes.io/name"}
	values = []string{"web", "a", "b", "v1.2", "Z", "x_y"}
)

// TestScaleSelector compares the selector of a built-in's Scale with the
// string kube's ScaleREST reports: metav1.LabelSelectorAsSelector(spec.
// selector).String() for deployments, replicasets and statefulsets
// (scaleFromDeployment and its twins), labels.SelectorFromSet(spec.
// selector).String() for replicationcontrollers (scaleFromRC), for random
// selectors.
func TestScaleSelector(t *testing.T) {
	deployments := interop.Builtin(t, "apps", "v1", "deployments")
	rcs := interop.Builtin(t, "", "v1", "replicationcontrollers")
	r := rand.New(rand.NewSource(2))
	pick := func(l []string) string { return l[r.Intn(len(l))] }
	ops := []metav1.LabelSelectorOperator{metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist}
	for range 500 {
		ls := &metav1.LabelSelector{}
		set := map[string]string{}
		for range r.Intn(3) {
			k, v := pick(keys), pick(values)
			set[k] = v
			if ls.MatchLabels == nil {
				ls.MatchLabels = map[string]string{}
			}
			ls.MatchLabels[k] = v
		}
		for range r.Intn(3) {
			e := metav1.LabelSelectorRequirement{Key: pick(keys), Operator: ops[r.Intn(len(ops))]}
			if e.Operator == metav1.LabelSelectorOpIn || e.Operator == metav1.LabelSelectorOpNotIn {
				for range 1 + r.Intn(3) {
					e.Values = append(e.Values, pick(values))
				}
			}
			ls.MatchExpressions = append(ls.MatchExpressions, e)
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil {
			t.Fatal(err)
		}
		d := appsv1.Deployment{Spec: appsv1.DeploymentSpec{Selector: ls}}
		if got, want := deployments.Scale.Selector(asMap(t, d)), sel.String(); got != want {
			t.Errorf("deployment selector %+v: got %q, kube's %q", ls, got, want)
		}
		rc := corev1.ReplicationController{Spec: corev1.ReplicationControllerSpec{Selector: set}}
		if got, want := rcs.Scale.Selector(asMap(t, rc)), labels.SelectorFromSet(set).String(); got != want {
			t.Errorf("replication controller selector %v: got %q, kube's %q", set, got, want)
		}
	}
}

func asMap(t *testing.T, v any) map[string]any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestGenerationOfWorkloads writes Deployments and DaemonSets to a
// listwatch binary with client-go and compares metadata.generation and
// the DaemonSet's template generation annotation with what kube's own
// strategies (PrepareForCreate, PrepareForUpdate, between its v1
// conversions) make of the same create and update: a Deployment's
// generation moves with its annotations, a DaemonSet's annotation keeps
// the stored template generation and moves with spec.template.
func TestGenerationOfWorkloads(t *testing.T) {
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}}
	deploymentCases := []struct {
		name   string
		change func(*appsv1.Deployment)
	}{
		{"annotation added", func(d *appsv1.Deployment) { d.Annotations = map[string]string{"a": "1"} }},
		{"label added", func(d *appsv1.Deployment) { d.Labels = map[string]string{"a": "1"} }},
		{"empty annotations", func(d *appsv1.Deployment) { d.Annotations = map[string]string{} }},
		{"replicas and annotation", func(d *appsv1.Deployment) {
			d.Spec.Replicas = ptr.To[int32](5)
			d.Annotations = map[string]string{"b": "2"}
		}},
	}
	for i, c := range deploymentCases {
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("d%d", i), Namespace: "default"},
			Spec:       appsv1.DeploymentSpec{Selector: selector, Template: template},
		}
		created, err := cs.AppsV1().Deployments("default").Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		next := created.DeepCopy()
		c.change(next)
		updated, err := cs.AppsV1().Deployments("default").Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := kubeUpdate(t, created, next, func() runtime.Object { return &kubeapps.Deployment{} }, &appsv1.Deployment{}, deploymentstrategy.Strategy)
		if updated.Generation != want.GetGeneration() {
			t.Errorf("deployment %s: generation %d, kube's %d", c.name, updated.Generation, want.GetGeneration())
		}
	}
	daemonSetCases := []struct {
		name   string
		create map[string]string // annotations on create
		change func(*appsv1.DaemonSet)
	}{
		{"template changed", nil, func(d *appsv1.DaemonSet) { d.Spec.Template.Spec.Containers[0].Image = "nginx:2" }},
		{"created at 5, template changed", map[string]string{templateGeneration: "5"}, func(d *appsv1.DaemonSet) { d.Spec.Template.Labels["x"] = "y" }},
		{"annotation written by the client", map[string]string{templateGeneration: "5"}, func(d *appsv1.DaemonSet) { d.Annotations[templateGeneration] = "99" }},
		{"annotation dropped", nil, func(d *appsv1.DaemonSet) { delete(d.Annotations, templateGeneration) }},
		{"min ready seconds", nil, func(d *appsv1.DaemonSet) { d.Spec.MinReadySeconds = 3 }},
		{"created at 0", map[string]string{templateGeneration: "0"}, func(d *appsv1.DaemonSet) { d.Labels = map[string]string{"a": "b"} }},
	}
	for i, c := range daemonSetCases {
		d := &appsv1.DaemonSet{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("ds%d", i), Namespace: "default", Annotations: c.create},
			Spec:       appsv1.DaemonSetSpec{Selector: selector, Template: *template.DeepCopy()},
		}
		created, err := cs.AppsV1().DaemonSets("default").Create(ctx, d, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		wantCreated := kubeCreate(t, d, &kubeapps.DaemonSet{}, &appsv1.DaemonSet{}, daemonsetstrategy.Strategy)
		if got, want := created.Annotations[templateGeneration], wantCreated.GetAnnotations()[templateGeneration]; got != want {
			t.Errorf("daemonset %s: created with template generation %q, kube's %q", c.name, got, want)
		}
		next := created.DeepCopy()
		c.change(next)
		updated, err := cs.AppsV1().DaemonSets("default").Update(ctx, next, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := kubeUpdate(t, created, next, func() runtime.Object { return &kubeapps.DaemonSet{} }, &appsv1.DaemonSet{}, daemonsetstrategy.Strategy)
		if updated.Generation != want.GetGeneration() || updated.Annotations[templateGeneration] != want.GetAnnotations()[templateGeneration] {
			t.Errorf("daemonset %s: generation %d, template generation %q; kube's %d, %q", c.name,
				updated.Generation, updated.Annotations[templateGeneration], want.GetGeneration(), want.GetAnnotations()[templateGeneration])
		}
	}
}

// templateGeneration is appsv1.DeprecatedTemplateGeneration.
const templateGeneration = appsv1.DeprecatedTemplateGeneration

// kubeCreate is in (a v1 object) as kube-apiserver stores it on create:
// defaulted, converted to its internal form, prepared by strategy s and
// converted back into out.
func kubeCreate(t *testing.T, in, internal, out runtime.Object, s interface {
	PrepareForCreate(context.Context, runtime.Object)
}) metav1.Object {
	t.Helper()
	v := in.DeepCopyObject()
	legacyscheme.Scheme.Default(v)
	convert(t, v, internal)
	s.PrepareForCreate(context.Background(), internal)
	convert(t, internal, out)
	return accessor(t, out)
}

// kubeUpdate is next replacing the stored old as kube-apiserver stores it:
// both in internal form, next's generation the stored one (BeforeUpdate),
// prepared by strategy s, converted back into out.
func kubeUpdate(t *testing.T, old, next runtime.Object, internal func() runtime.Object, out runtime.Object, s interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
}) metav1.Object {
	t.Helper()
	oi, ni := internal(), internal()
	convert(t, old, oi)
	n := next.DeepCopyObject()
	legacyscheme.Scheme.Default(n)
	convert(t, n, ni)
	accessor(t, ni).SetGeneration(accessor(t, oi).GetGeneration())
	s.PrepareForUpdate(context.Background(), ni, oi)
	convert(t, ni, out)
	return accessor(t, out)
}

func convert(t *testing.T, in, out runtime.Object) {
	t.Helper()
	if err := legacyscheme.Scheme.Convert(in, out, nil); err != nil {
		t.Fatal(err)
	}
}

func accessor(t *testing.T, obj runtime.Object) metav1.Object {
	t.Helper()
	m, err := meta.Accessor(obj)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestJobSelector creates Jobs in a listwatch binary and compares the
// selector, template labels and scheduling stored with what kube's job
// strategy's PrepareForCreate makes of the same Job with the same uid: a
// generated selector on the uid label, unless manualSelector, labels the
// user set kept, the alpha scheduling dropped.
func TestJobSelector(t *testing.T) {
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1, ContentConfig: rest.ContentConfig{ContentType: "application/json"}})
	if err != nil {
		t.Fatal(err)
	}
	spec := func(labels map[string]string, manual *bool, sel *metav1.LabelSelector) batchv1.JobSpec {
		return batchv1.JobSpec{ManualSelector: manual, Selector: sel, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec:       corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}}
	}
	cases := map[string]batchv1.JobSpec{
		"generated":        spec(nil, nil, nil),
		"with labels":      spec(map[string]string{"app": "x", "job-name": "with-labels"}, nil, nil),
		"manual":           spec(map[string]string{"app": "x"}, ptr.To(true), &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}),
		"manual false set": spec(map[string]string{"app": "x"}, ptr.To(false), nil),
		// The alpha spec.scheduling, dropped with its gate off.
		"scheduling": func() batchv1.JobSpec {
			s := spec(nil, nil, nil)
			s.Scheduling = &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
				Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: ptr.To[int32](2)},
			}}
			return s
		}(),
	}
	for name, s := range cases {
		// A job-name label the user sets must be the Job's name (kube's
		// ValidateGeneratedSelector), so each Job is named after its case.
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: strings.ReplaceAll(name, " ", "-"), Namespace: "default"}, Spec: s}
		created, err := cs.BatchV1().Jobs("default").Create(t.Context(), job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		job.UID = created.UID
		var want batchv1.Job
		kubeCreate(t, job, &kubebatch.Job{}, &want, jobstrategy.Strategy)
		if diff := cmp.Diff(want.Spec.Selector, created.Spec.Selector); diff != "" {
			t.Errorf("%s: selector, kube's (-) and ours (+):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.Spec.Template.Labels, created.Spec.Template.Labels); diff != "" {
			t.Errorf("%s: template labels, kube's (-) and ours (+):\n%s", name, diff)
		}
		if diff := cmp.Diff(want.Spec.Scheduling, created.Spec.Scheduling); diff != "" {
			t.Errorf("%s: scheduling, kube's (-) and ours (+):\n%s", name, diff)
		}
	}
}

// TestCreateOnUpdate compares, for kinds on either side, whether a PUT may
// create a missing object (listwatch's CreateOnUpdate) with kube's
// strategy's AllowCreateOnUpdate.
func TestCreateOnUpdate(t *testing.T) {
	kube := map[[3]string]interface {
		AllowCreateOnUpdate(context.Context) bool
	}{
		{"", "v1", "limitranges"}:                    limitrangestrategy.Strategy,
		{"", "v1", "services"}:                       servicestrategy.Strategy,
		{"coordination.k8s.io", "v1", "leases"}:      leasestrategy.Strategy,
		{"node.k8s.io", "v1", "runtimeclasses"}:      runtimeclassstrategy.Strategy,
		{"rbac.authorization.k8s.io", "v1", "roles"}: rolestrategy.Strategy,
		{"", "v1", "events"}:                         eventstrategy.Strategy,
		{"", "v1", "configmaps"}:                     configmapstrategy.Strategy,
		{"", "v1", "secrets"}:                        secretstrategy.Strategy,
		{"", "v1", "pods"}:                           podstrategy.Strategy,
		{"", "v1", "namespaces"}:                     namespacestrategy.Strategy,
		{"apps", "v1", "deployments"}:                deploymentstrategy.Strategy,
		{"batch", "v1", "jobs"}:                      jobstrategy.Strategy,
		{"storage.k8s.io", "v1", "storageclasses"}:   storageclassstrategy.Strategy,
	}
	for gvr, s := range kube {
		r := interop.Builtin(t, gvr[0], gvr[1], gvr[2])
		if want := s.AllowCreateOnUpdate(context.Background()); r.CreateOnUpdate != want {
			t.Errorf("%v: CreateOnUpdate %v, kube's AllowCreateOnUpdate %v", gvr, r.CreateOnUpdate, want)
		}
	}
}
