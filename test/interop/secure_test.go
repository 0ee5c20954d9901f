package interop

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestSecureMode: the binary in secure mode on loopback (--secure) writes
// an admin kubeconfig with which kubectl (current and Debian's) and
// client-go list namespaces; client-go without a client certificate is
// refused; after a restart on another port, the first kubeconfig's CA and
// certificate still work.
func TestSecureMode(t *testing.T) {
	bin := listwatchBin(t)
	data := t.TempDir()
	args := []string{"--secure", "--data-dir", data, "--unsafe-no-fsync"}
	lw := StartListwatch(t, bin, args...)
	if !strings.HasPrefix(lw.URL, "https://127.0.0.1:") || lw.Kubeconfig != filepath.Join(data, "admin.kubeconfig") {
		t.Fatalf("serving %s with kubeconfig %q, want https on 127.0.0.1 and %s/admin.kubeconfig", lw.URL, lw.Kubeconfig, data)
	}
	for name, newK := range kubectls(t) {
		t.Run("kubectl "+name, func(t *testing.T) {
			out := newK(t, lw.URL).must(t, "--kubeconfig", lw.Kubeconfig, "get", "namespaces")
			contains(t, out, "default", "kube-system")
		})
	}
	admin, err := clientcmd.BuildConfigFromFlags("", lw.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	listNamespaces(t, admin)

	anonymous := rest.AnonymousClientConfig(admin)
	cs, err := kubernetes.NewForConfig(anonymous)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{}); err == nil {
		t.Error("client-go without a client certificate listed namespaces")
	}

	if err := lw.Stop(); err != nil {
		t.Fatal(err)
	}
	lw = StartListwatch(t, bin, args...)
	admin.Host = lw.URL
	listNamespaces(t, admin)
}

// listNamespaces lists namespaces with client-go as cfg says and checks
// that those every server has are there.
func listNamespaces(t *testing.T, cfg *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	list, err := cs.CoreV1().Namespaces().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("client-go lists namespaces at %s: %v", cfg.Host, err)
	}
	var names []string
	for _, ns := range list.Items {
		names = append(names, ns.Name)
	}
	for _, want := range []string{"default", "kube-system"} {
		if !slices.Contains(names, want) {
			t.Errorf("namespaces %v lack %s", names, want)
		}
	}
}
