package interop

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// contentTypes records the Content-Type of every answer, by request
// method and path.
type contentTypes struct {
	next http.RoundTripper
	mu   sync.Mutex
	seen map[string]string
}

func (c *contentTypes) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(r)
	if err == nil {
		c.mu.Lock()
		key := r.Method + " " + r.URL.Path
		if r.URL.Query().Get("watch") == "true" {
			key += "?watch"
		}
		c.seen[key] = resp.Header.Get("Content-Type")
		c.mu.Unlock()
	}
	return resp, err
}

// TestClientGoProtobufKinds drives the binary with client-go's typed
// clients asking for protobuf only, as a program built on
// kubernetes.Clientset with ContentType protobuf does: Pods, Deployments,
// Services and Jobs are created, read, listed and watched, every answer is
// protobuf, and the objects read back carry what was written (quantities,
// int-or-strings, pointers) and the schemas' defaults.
func TestClientGoProtobufKinds(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	types := &contentTypes{seen: map[string]string{}}
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1,
		ContentConfig: rest.ContentConfig{ContentType: mediaProtobuf, AcceptContentTypes: mediaProtobuf},
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper { types.next = rt; return types }})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const ns = "default"
	labels := map[string]string{"app": "web"}
	podSpec := corev1.PodSpec{Containers: []corev1.Container{{
		Name: "web", Image: "nginx:1.27",
		Ports: []corev1.ContainerPort{{ContainerPort: 80}},
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
			corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromString("http")}}},
	}}}

	pods := cs.CoreV1().Pods(ns)
	podWatch := startWatch(t, func() (watch.Interface, error) { return pods.Watch(ctx, metav1.ListOptions{}) })
	pod, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: labels}, Spec: podSpec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod: %v", err)
	}
	got, err := pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := got.Spec.Containers[0]
	if got.UID != pod.UID || c.Image != "nginx:1.27" || c.Resources.Limits.Cpu().MilliValue() != 500 ||
		c.ReadinessProbe.HTTPGet.Port != intstr.FromString("http") || c.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("pod read back: %+v", got.Spec)
	}
	wantEvent(t, podWatch, "web")
	if l, err := pods.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 || l.Items[0].Name != "web" {
		t.Errorf("list pods: %v, %v", l, err)
	}

	deployments := cs.AppsV1().Deployments(ns)
	depWatch := startWatch(t, func() (watch.Interface, error) { return deployments.Watch(ctx, metav1.ListOptions{}) })
	if _, err := deployments.Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](3), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: podSpec},
		Strategy: appsv1.DeploymentStrategy{RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromString("50%"))}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create deployment: %v", err)
	}
	dep, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 3 || *dep.Spec.Strategy.RollingUpdate.MaxSurge != intstr.FromString("50%") || dep.Spec.Template.Labels["app"] != "web" {
		t.Errorf("deployment read back: %+v", dep.Spec)
	}
	wantEvent(t, depWatch, "web")
	if l, err := deployments.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("list deployments: %v, %v", l, err)
	}

	services := cs.CoreV1().Services(ns)
	svcWatch := startWatch(t, func() (watch.Interface, error) { return services.Watch(ctx, metav1.ListOptions{}) })
	if _, err := services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create service: %v", err)
	}
	svc, err := services.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := svc.Spec.Ports[0]; p.TargetPort != intstr.FromInt32(8080) || p.Protocol != corev1.ProtocolTCP || svc.Spec.Selector["app"] != "web" {
		t.Errorf("service read back: %+v", svc.Spec)
	}
	wantEvent(t, svcWatch, "web")
	if l, err := services.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) == 0 {
		t.Errorf("list services: %v, %v", l, err)
	}

	jobs := cs.BatchV1().Jobs(ns)
	jobWatch := startWatch(t, func() (watch.Interface, error) { return jobs.Watch(ctx, metav1.ListOptions{}) })
	jobSpec := podSpec
	jobSpec.RestartPolicy = corev1.RestartPolicyNever
	if _, err := jobs.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"}, Spec: batchv1.JobSpec{
		BackoffLimit: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: jobSpec},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create job: %v", err)
	}
	job, err := jobs.Get(ctx, "once", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *job.Spec.BackoffLimit != 2 || job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("job read back: %+v", job.Spec)
	}
	wantEvent(t, jobWatch, "once")
	if l, err := jobs.List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 1 {
		t.Errorf("list jobs: %v, %v", l, err)
	}

	types.mu.Lock()
	defer types.mu.Unlock()
	for _, plural := range []string{"pods", "deployments", "services", "jobs"} {
		n := 0
		for req, ct := range types.seen {
			if !strings.HasSuffix(strings.TrimSuffix(req, "?watch"), "/"+plural) && !strings.Contains(req, "/"+plural+"/") {
				continue
			}
			n++
			want := mediaProtobuf
			if strings.HasSuffix(req, "?watch") {
				want += ";stream=watch"
			}
			if ct != want {
				t.Errorf("%s answered %q, want %q", req, ct, want)
			}
		}
		if n < 4 { // create, get, list, watch
			t.Errorf("%s: %d kinds of request seen: %v", plural, n, types.seen)
		}
	}
}

// startWatch starts a watch, stopped at the test's end.
func startWatch(t *testing.T, w func() (watch.Interface, error)) watch.Interface {
	t.Helper()
	wi, err := w()
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(wi.Stop)
	return wi
}

// wantEvent waits for the ADDED event of the object named name, typed.
func wantEvent(t *testing.T, w watch.Interface, name string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended before %s was added", name)
			}
			obj, isObj := ev.Object.(metav1.Object)
			if ev.Type == watch.Error || !isObj {
				t.Fatalf("watch: %s %#v", ev.Type, ev.Object)
			}
			if _, isTyped := ev.Object.(runtime.Unstructured); ev.Type == watch.Added && obj.GetName() == name && !isTyped {
				return
			}
		case <-timeout:
			t.Fatalf("no ADDED event of %s", name)
		}
	}
}
