package interop

import (
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/testwait"
)

// TestRootCAOneLeaderOnEtcd runs two servers on one etcd with different
// --root-ca-file: only the one leading the controllers puts its CA in
// kube-root-ca.crt, as kube's publisher in the one leading controller
// manager; the other's leaves kube-system's as the leader wrote it, and
// a namespace it makes ends with the leader's CA. Once the leader is
// killed, the other leads and its CA replaces the first's.
func TestRootCAOneLeaderOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	bin := listwatchBin(t)
	cli := RunEtcd(t)
	args := []string{"--storage", "etcd", "--etcd-endpoints", "http://" + cli.Endpoints()[0], "--unsafe-no-fsync",
		"--leader-elect-lease-duration", "4s", "--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"}
	dir := t.TempDir()
	caFile := func(name string) (string, string) {
		path := filepath.Join(dir, name)
		ca := authntest.NewCA(t)
		authntest.WriteFile(t, path, string(ca.PEM))
		return path, string(ca.PEM)
	}
	fileA, caA := caFile("a.crt")
	fileB, caB := caFile("b.crt")
	a := StartListwatch(t, bin, append(args, "--root-ca-file", fileA)...)
	testwait.Until(t, binStartTimeout, "the first server to lead", func() bool { return leadsControllers(a) })
	b := StartListwatch(t, bin, append(args, "--root-ca-file", fileB)...)
	cs := typedClientset(t, b.URL)

	before := waitRootCAHolds(t, cs, "kube-system", caA)
	if _, err := cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "root-ca"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRootCAHolds(t, cs, "root-ca", caA)
	after, err := cs.CoreV1().ConfigMaps("kube-system").Get(t.Context(), "kube-root-ca.crt", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion {
		t.Fatalf("kube-system's kube-root-ca.crt rewritten while the leader's CA stood (resourceVersion %s, then %s)", before.ResourceVersion, after.ResourceVersion)
	}

	if err := a.Kill(); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, binStartTimeout, "the second server to lead", func() bool { return leadsControllers(b) })
	waitRootCAHolds(t, cs, "kube-system", caB)
}

// waitRootCAHolds waits until namespace ns's kube-root-ca.crt holds ca,
// and returns it.
func waitRootCAHolds(t *testing.T, cs *kubernetes.Clientset, ns, ca string) *corev1.ConfigMap {
	t.Helper()
	var cm *corev1.ConfigMap
	testwait.Until(t, 30*time.Second, ns+"'s kube-root-ca.crt to hold the CA", func() bool {
		got, err := cs.CoreV1().ConfigMaps(ns).Get(t.Context(), "kube-root-ca.crt", metav1.GetOptions{})
		cm = got
		return err == nil && got.Data["ca.crt"] == ca
	})
	return cm
}
