package interop

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/listwatch/listwatch/internal/testwait"
)

const resizable = `apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - name: app
    image: nginx
    resources: {requests: {cpu: 100m, memory: 64Mi}, limits: {memory: 128Mi}}
`

// TestPodParts resizes a Pod with kubectl's `patch --subresource resize`
// and client-go's UpdateResize (in protobuf, as typed clients in
// controllers speak it): the stored pod takes the containers'
// new cpu and memory and its generation goes up, while what else the
// write says (an image) is dropped; a resize that would change the pod's
// QoS class is refused with kube's cause. Then `kubectl debug` adds an
// ephemeral container through pods/ephemeralcontainers, and client-go's
// UpdateEphemeralContainers may not remove it, nor add a privileged one
// in a namespace that enforces PodSecurity's baseline. A pod bound to a
// node is resized only when the node is stored and can hold it.
func TestPodParts(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	k := newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), lw.URL, true)
	contains(t, k.must(t, "apply", "-f", writeFile(t, t.TempDir(), "pod.yaml", resizable)), `pod/web created`)

	contains(t, k.must(t, "patch", "pod", "web", "--subresource", "resize", "-p",
		`{"spec":{"containers":[{"name":"app","image":"nginx:2","resources":{"requests":{"cpu":"200m"}}}]}}`), `pod/web patched`)
	const path = "/api/v1/namespaces/default/pods/web"
	_, obj := getObject(t, lw.URL, path)
	app := field(obj, "spec", "containers").([]any)[0].(map[string]any)
	if field(app, "resources", "requests", "cpu") != "200m" || app["image"] != "nginx" || field(obj, "metadata", "generation") != 2.0 {
		t.Errorf("pod after kubectl's resize: generation %v, app %v", field(obj, "metadata", "generation"), app)
	}
	if code, got := getObject(t, lw.URL, path+"/resize"); code != 200 || field(got, "metadata", "name") != "web" {
		t.Errorf("GET pods/web/resize: %d %v", code, got)
	}

	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, ContentConfig: rest.ContentConfig{ContentType: "application/vnd.kubernetes.protobuf"}})
	if err != nil {
		t.Fatal(err)
	}
	pods := cs.CoreV1().Pods("default")
	pod, err := pods.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("256Mi")
	resized, err := pods.UpdateResize(t.Context(), "web", pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateResize: %v", err)
	}
	if got := resized.Spec.Containers[0].Resources.Limits.Memory().String(); got != "256Mi" || resized.Generation != 3 {
		t.Errorf("UpdateResize answered memory limit %s, generation %d; want 256Mi, 3", got, resized.Generation)
	}

	guaranteed := resized.DeepCopy()
	guaranteed.Spec.Containers[0].Resources.Limits = corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi"),
	}
	_, err = pods.UpdateResize(t.Context(), "web", guaranteed, metav1.UpdateOptions{})
	if want := "Pod QOS Class may not change as a result of resizing"; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a resize to Guaranteed: %v, want 422 %q", err, want)
	}

	contains(t, k.must(t, "debug", "web", "--image", "busybox", "--target", "app", "--container", "debugger"), `Targeting container "app"`)
	pod, err = pods.Get(t.Context(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ecs := pod.Spec.EphemeralContainers; len(ecs) != 1 || ecs[0].Name != "debugger" || ecs[0].TargetContainerName != "app" || pod.Generation != 4 {
		t.Fatalf("pod after kubectl debug: generation %d, ephemeral containers %+v", pod.Generation, ecs)
	}
	pod.Spec.EphemeralContainers = nil
	_, err = pods.UpdateEphemeralContainers(t.Context(), "web", pod, metav1.UpdateOptions{})
	if want := `existing ephemeral containers "debugger" may not be removed`; !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("removing an ephemeral container: %v, want 422 %q", err, want)
	}

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "locked", Labels: map[string]string{"pod-security.kubernetes.io/enforce": "baseline"}}}
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), ns, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	locked := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx"}}}}
	if locked, err = cs.CoreV1().Pods("locked").Create(t.Context(), locked, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	privileged := true
	locked.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "root", Image: "busybox", SecurityContext: &corev1.SecurityContext{Privileged: &privileged}}}}
	_, err = cs.CoreV1().Pods("locked").UpdateEphemeralContainers(t.Context(), "web", locked, metav1.UpdateOptions{})
	if want := `violates PodSecurity "baseline:latest": privileged (container "root" must not set securityContext.privileged=true)`; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("a privileged ephemeral container under baseline: %v, want 403 %q", err, want)
	}

	bound := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bound"}, Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "nginx",
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}}}}
	if bound, err = pods.Create(t.Context(), bound, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	bound.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("2")
	_, err = pods.UpdateResize(t.Context(), "bound", bound, metav1.UpdateOptions{})
	if want := `pods "bound" is forbidden: node "n1" not found`; !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("a resize on a missing node: %v, want 403 %q", err, want)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	if node, err = cs.CoreV1().Nodes().Create(t.Context(), node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	node.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(t.Context(), node, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The plugin reads nodes from the watch cache, which may not hold the
	// status just written yet (as kube's lister may not).
	testwait.UntilNil(t, 10*time.Second, "a resize beyond the node refused", func() error {
		_, err := pods.UpdateResize(t.Context(), "bound", bound, metav1.UpdateOptions{})
		if want := "node didn't have enough allocatable resources: cpu, requested: 2000, allocatable: 1000"; !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("%v, want 403 %q", err, want)
		}
		return nil
	})
	bound.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("500m")
	if _, err := pods.UpdateResize(t.Context(), "bound", bound, metav1.UpdateOptions{}); err != nil {
		t.Errorf("a resize the node holds: %v", err)
	}
}
