package interop

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestClientGoImmutableFields updates, with client-go's typed clients
// against the binary, what kube lets change after creation and what it
// does not, and wants kube's 422 for the latter (its causes as
// kubevalidation proves them) and the object unchanged.
func TestClientGoImmutableFields(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: lw.URL, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	meta := metav1.ObjectMeta{Name: "frozen", Namespace: "default"}

	// wantInvalid checks that err is kube's 422 with exactly the causes
	// want, each as field, type and the message's first line.
	wantInvalid := func(t *testing.T, err error, want ...metav1.StatusCause) {
		t.Helper()
		status, ok := err.(apierrors.APIStatus)
		if !ok || !apierrors.IsInvalid(err) {
			t.Fatalf("got %v, want 422 Invalid", err)
		}
		var got []metav1.StatusCause
		for _, c := range status.Status().Details.Causes {
			c.Message, _, _ = strings.Cut(c.Message, "\n")
			got = append(got, c)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("causes (-want +got):\n%s", diff)
		}
	}

	t.Run("ConfigMap", func(t *testing.T) {
		yes := true
		cm, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: meta, Immutable: &yes, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Labels = map[string]string{"allowed": "yes"}
		if cm, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a label on an immutable ConfigMap: %v", err)
		}
		cm.Data["k"] = "changed"
		_, err = cs.CoreV1().ConfigMaps("default").Update(ctx, cm, metav1.UpdateOptions{})
		wantInvalid(t, err, metav1.StatusCause{Type: metav1.CauseTypeForbidden, Field: "data", Message: "Forbidden: field is immutable when `immutable` is set"})
		if got, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "frozen", metav1.GetOptions{}); err != nil || got.Data["k"] != "v" {
			t.Errorf("stored: %v %v, want data unchanged", got.Data, err)
		}
	})

	t.Run("Secret", func(t *testing.T) {
		s, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"k": "v"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Type = "example.com/other"
		_, err = cs.CoreV1().Secrets("default").Update(ctx, s, metav1.UpdateOptions{})
		wantInvalid(t, err, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "type", Message: `Invalid value: "example.com/other": field is immutable`})
	})

	t.Run("Deployment", func(t *testing.T) {
		labels := map[string]string{"app": "web"}
		d, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: meta, Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "tier": "front"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}},
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		d.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "tier": "front"}}
		_, err = cs.AppsV1().Deployments("default").Update(ctx, d, metav1.UpdateOptions{})
		wantInvalid(t, err, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.selector",
			Message: `Invalid value: {"matchLabels":{"app":"web","tier":"front"}}: field is immutable`})
	})

	t.Run("StatefulSet", func(t *testing.T) {
		labels := map[string]string{"app": "db"}
		s, err := cs.AppsV1().StatefulSets("default").Create(ctx, &appsv1.StatefulSet{ObjectMeta: meta, Spec: appsv1.StatefulSetSpec{
			ServiceName: "db",
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "db", Image: "postgres:17"}}},
			},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.ServiceName = "other"
		s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		_, err = cs.AppsV1().StatefulSets("default").Update(ctx, s, metav1.UpdateOptions{})
		wantInvalid(t, err,
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.serviceName", Message: `Invalid value: "other": field is immutable`},
			metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.podManagementPolicy", Message: `Invalid value: "Parallel": field is immutable`})
	})

	t.Run("StatefulSet claim templates", func(t *testing.T) {
		labels := map[string]string{"app": "store"}
		claim := corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data"}, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}
		s, err := cs.AppsV1().StatefulSets("default").Create(ctx, &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "store", Namespace: "default"}, Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "db", Image: "postgres:17", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
				}}},
			},
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{claim},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		s.Spec.Replicas = ptr.To[int32](3)
		if s, err = cs.AppsV1().StatefulSets("default").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a StatefulSet's replicas: %v", err)
		}
		s.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		_, err = cs.AppsV1().StatefulSets("default").Update(ctx, s, metav1.UpdateOptions{})
		status, _ := err.(apierrors.APIStatus)
		if !apierrors.IsInvalid(err) || len(status.Status().Details.Causes) != 1 || status.Status().Details.Causes[0].Field != "spec.volumeClaimTemplates" ||
			!strings.HasSuffix(status.Status().Details.Causes[0].Message, ": field is immutable") {
			t.Errorf("a claim template resized: %v, want 422 with spec.volumeClaimTemplates immutable", err)
		}
	})

	t.Run("suspended Job", func(t *testing.T) {
		yes := true
		j, err := cs.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "queued", Namespace: "default"}, Spec: batchv1.JobSpec{
			Suspend: &yes,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "run", Image: "busybox:1.37"}},
			}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		// What a queue controller does before it admits the Job.
		j.Spec.Template.Spec.NodeSelector = map[string]string{"pool": "gpu"}
		j.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
		if j, err = cs.BatchV1().Jobs("default").Update(ctx, j, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a suspended Job's node selector and resources: %v", err)
		}
		j.Spec.Template.Spec.Containers[0].Image = "busybox:1.38"
		_, err = cs.BatchV1().Jobs("default").Update(ctx, j, metav1.UpdateOptions{})
		status, _ := err.(apierrors.APIStatus)
		if !apierrors.IsInvalid(err) || len(status.Status().Details.Causes) != 1 || status.Status().Details.Causes[0].Field != "spec.template.spec" {
			t.Errorf("a suspended Job's image: %v, want 422 with spec.template.spec immutable", err)
		}
	})

	t.Run("Job", func(t *testing.T) {
		j, err := cs.BatchV1().Jobs("default").Create(ctx, &batchv1.Job{ObjectMeta: meta, Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "run", Image: "busybox:1.37"}},
			}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		j.Spec.Template.Spec.Containers[0].Image = "busybox:1.38"
		_, err = cs.BatchV1().Jobs("default").Update(ctx, j, metav1.UpdateOptions{})
		var status apierrors.APIStatus
		if apierrors.IsInvalid(err) {
			status = err.(apierrors.APIStatus)
		}
		if status == nil || len(status.Status().Details.Causes) != 1 || status.Status().Details.Causes[0].Field != "spec.template" ||
			!strings.HasSuffix(status.Status().Details.Causes[0].Message, ": field is immutable") {
			t.Errorf("a Job's new image: %v, want 422 with spec.template immutable", err)
		}
	})

	t.Run("PersistentVolumeClaim", func(t *testing.T) {
		c, err := cs.CoreV1().PersistentVolumeClaims("default").Create(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: meta, Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		c.Spec.VolumeName = "pv-1" // allowed once
		if c, err = cs.CoreV1().PersistentVolumeClaims("default").Update(ctx, c, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a claim's volumeName: %v", err)
		}
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi") // only once bound
		_, err = cs.CoreV1().PersistentVolumeClaims("default").Update(ctx, c, metav1.UpdateOptions{})
		wantInvalid(t, err, metav1.StatusCause{Type: metav1.CauseTypeForbidden, Field: "spec",
			Message: "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"})
	})

	t.Run("Pod", func(t *testing.T) {
		p, err := cs.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}},
		}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Spec.Containers[0].Image = "nginx:1.28"
		if p, err = cs.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("a pod's image: %v", err)
		}
		p.Spec.Containers[0].Name = "renamed"
		_, err = cs.CoreV1().Pods("default").Update(ctx, p, metav1.UpdateOptions{})
		wantInvalid(t, err, metav1.StatusCause{Type: metav1.CauseTypeForbidden, Field: "spec",
			Message: "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)"})
		if !strings.Contains(err.Error(), `spec.containers[0].name: "web" -> "renamed"`) {
			t.Errorf("message %q, want the change it refuses", err)
		}
		if got, err := cs.CoreV1().Pods("default").Get(ctx, "frozen", metav1.GetOptions{}); err != nil || got.Spec.Containers[0].Name != "web" || got.Spec.Containers[0].Image != "nginx:1.28" {
			t.Errorf("stored: %+v %v, want the new image and the old name", got.Spec.Containers, err)
		}
	})
}
