package interop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/testserver"
)

// startTestServer starts an in-process server (package testserver) with
// the Widget definition loaded from a file, as a controller's tests would
// from its config/crd directory, and returns it with client-go's
// configuration from its kubeconfig.
func startTestServer(t *testing.T, secure bool) (*testserver.Server, *rest.Config) {
	t.Helper()
	def := widgetDefinition()
	def.APIVersion, def.Kind = "apiextensions.k8s.io/v1", "CustomResourceDefinition"
	text, err := yaml.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "widgets.yaml"), text, 0o600); err != nil {
		t.Fatal(err)
	}
	s := testserver.New(t, testserver.Options{CRDDirectoryPaths: []string{dir}, ErrorIfCRDPathMissing: true, Secure: secure})
	cfg, err := clientcmd.RESTConfigFromKubeConfig(s.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}

// testServerModes name the modes of a test server, anonymous and secure.
var testServerModes = map[string]bool{"anonymous": false, "secure": true}

// TestTestServerControllerRuntime runs the widget operator's
// controller-runtime manager against an in-process server: its caches
// sync, it reconciles a Widget into a ConfigMap it controls, the
// server's garbage collector deletes that ConfigMap once the Widget is
// gone, and deleting a namespace deletes its custom resources and then the
// namespace.
func TestTestServerControllerRuntime(t *testing.T) {
	for name, secure := range testServerModes {
		t.Run(name, func(t *testing.T) {
			_, cfg := startTestServer(t, secure)
			f := newWidgetFixture(t, cfg) // the definition is there already: it waits for it only
			op := runOperator(t, cfg, operatorOptions{id: "a", namespace: f.ns, releaseOnCancel: true})
			if !op.mgr.GetCache().WaitForCacheSync(t.Context()) {
				t.Fatal("the manager's caches did not sync")
			}
			f.createWidget(t, "red", "red", "")
			f.waitConverged(t, "red", map[string]string{"color": "red", "secretRevision": "", "reconciler": "a"})
			f.deleteFinalized(t, "red")
			f.waitGone(t, &Widget{}, "red")
			f.waitGone(t, &corev1.ConfigMap{}, "red") // only the garbage collector deletes it

			doomed, err := f.cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "doomed-"}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			w := &Widget{ObjectMeta: metav1.ObjectMeta{Name: "blue", Namespace: doomed.Name}, Spec: WidgetSpec{Color: "blue"}}
			if err := f.cl.Create(t.Context(), w); err != nil {
				t.Fatal(err)
			}
			if err := f.cs.CoreV1().Namespaces().Delete(t.Context(), doomed.Name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "namespace "+doomed.Name+" to go", func(ctx context.Context) (bool, string, error) {
				ns, err := f.cs.CoreV1().Namespaces().Get(ctx, doomed.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					return true, "", nil
				}
				return false, fmt.Sprintf("still there: %v", ns.Status), err
			})
			var left WidgetList
			if err := f.cl.List(t.Context(), &left, client.InNamespace(doomed.Name)); err != nil || len(left.Items) != 0 {
				t.Errorf("widgets of the deleted namespace: %v %v, want none", left.Items, err)
			}
		})
	}
}

// TestTestServerKubectl runs kubectl with a test server's kubeconfig:
// it applies a Widget and finds it, anonymously and over HTTPS with the
// kubeconfig's client certificate.
func TestTestServerKubectl(t *testing.T) {
	bin, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("Debian's kubectl is not installed (apt-get install -y kubernetes-client; .ci/run does)")
	}
	for name, secure := range testServerModes {
		t.Run(name, func(t *testing.T) {
			s, _ := startTestServer(t, secure)
			home := t.TempDir()
			k := kubectl{bin: bin, server: s.URL, env: append(os.Environ(), "HOME="+home, "KUBECONFIG="+s.KubeconfigPath, "KUBECACHEDIR="+filepath.Join(home, "cache"))}
			widget := filepath.Join(home, "red.yaml")
			if err := os.WriteFile(widget, []byte("apiVersion: example.listwatch.io/v1\nkind: Widget\nmetadata: {name: red, namespace: default}\nspec: {color: red}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			k.must(t, "apply", "-f", widget)
			if out := k.must(t, "get", "widgets", "-n", "default", "-o", "name"); out != "widget.example.listwatch.io/red\n" {
				t.Errorf("kubectl get widgets: %q, want the one applied", out)
			}
		})
	}
}
