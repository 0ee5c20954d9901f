package admissionplugins

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/listwatch/listwatch/test/interop"
)

// TestPodsFilesReachTheServer runs the binary in secure mode and checks
// that what a pod's token volume holds reaches the API as the pod would:
// the kube-root-ca.crt ConfigMap of a new namespace holds the CA that
// verifies the server, and a token of the namespace's default account,
// the pod's, authenticates as that account.
func TestPodsFilesReachTheServer(t *testing.T) {
	lw := interop.StartListwatch(t, interop.BuildOnce(t, "../../..", "./cmd/listwatch"), "--secure", "--unsafe-no-fsync")
	admin, err := clientcmd.BuildConfigFromFlags("", lw.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cs := kubernetes.NewForConfigOrDie(admin)
	ctx := t.Context()
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", "kube-root-ca.crt").String()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var ca string
	for ev := range w.ResultChan() {
		if cm, ok := ev.Object.(*corev1.ConfigMap); ok && ev.Type == watch.Added {
			ca = cm.Data["ca.crt"]
			break
		}
	}
	pod, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	token := pod.Spec.Volumes[0].Projected.Sources[0].ServiceAccountToken
	tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, pod.Spec.ServiceAccountName, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: token.ExpirationSeconds}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	asPod, err := kubernetes.NewForConfig(&rest.Config{Host: admin.Host, BearerToken: tr.Status.Token, TLSClientConfig: rest.TLSClientConfig{CAData: []byte(ca)}})
	if err != nil {
		t.Fatal(err)
	}
	review, err := asPod.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the pod's CA and token: %v", err)
	}
	if want := "system:serviceaccount:" + ns + ":default"; review.Status.UserInfo.Username != want {
		t.Errorf("the pod is %q, want %q", review.Status.UserInfo.Username, want)
	}
}
