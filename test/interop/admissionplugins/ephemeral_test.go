package admissionplugins

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEphemeralContainersAsKubesPlugins adds an ephemeral container to a
// pod on the binary with client-go and through kube's plugins (a pods/
// ephemeralcontainers update), and compares the refusals, or that both
// admit it: under an account that enforces mountable secrets, its env and
// envFrom may reference the account's secrets only.
func TestEphemeralContainersAsKubesPlugins(t *testing.T) {
	cs := start(t)
	pods := cs.CoreV1().Pods(ns)
	podsResource := corev1.SchemeGroupVersion.WithResource("pods")
	secretEnv := func(name string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}}
	}
	secretEnvFrom := func(name string) []corev1.EnvFromSource {
		return []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: name}}}}
	}
	for _, tc := range []struct {
		name, account string
		ephemeral     corev1.EphemeralContainerCommon
		refused       bool
	}{
		{"strict-env-allowed", "strict", corev1.EphemeralContainerCommon{Env: secretEnv("allowed"), EnvFrom: secretEnvFrom("allowed")}, false},
		{"lax-env-from-other", "default", corev1.EphemeralContainerCommon{EnvFrom: secretEnvFrom("other")}, false},
		{"strict-env-other", "strict", corev1.EphemeralContainerCommon{Env: secretEnv("other")}, true},
		{"strict-env-from-other", "strict", corev1.EphemeralContainerCommon{Env: secretEnv("allowed"), EnvFrom: secretEnvFrom("other")}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: tc.name}, Spec: corev1.PodSpec{
				ServiceAccountName: tc.account, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}
			old, err := pods.Create(t.Context(), pod, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			debugged := old.DeepCopy()
			tc.ephemeral.Name, tc.ephemeral.Image = "debugger", "busybox"
			debugged.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: tc.ephemeral}}
			want, wantErr := kubeAdmitTo(t, cs, debugged.DeepCopy(), old.DeepCopy(), podsResource, "ephemeralcontainers")
			if (wantErr != nil) != tc.refused {
				t.Fatalf("kube's plugins answered %v, want a refusal: %t", wantErr, tc.refused)
			}
			_, err = pods.UpdateEphemeralContainers(t.Context(), tc.name, debugged, metav1.UpdateOptions{})
			sameOutcome(t, pods, tc.name, want, wantErr, err, func(p *corev1.Pod) any {
				var names []string
				for _, c := range p.Spec.EphemeralContainers {
					names = append(names, c.Name)
				}
				return names
			})
		})
	}
}
