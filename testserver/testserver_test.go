package testserver_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/testserver"
)

var (
	configMaps = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	secrets    = client.GroupVersionResource{Version: "v1", Resource: "secrets"}
	namespaces = client.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	widgets    = client.GroupVersionResource{Group: "example.listwatch.io", Version: "v1", Resource: "widgets"}
	// widgetsV1beta1 is the definition's second served version.
	widgetsV1beta1 = client.GroupVersionResource{Group: "example.listwatch.io", Version: "v1beta1", Resource: "widgets"}
	gadgets        = client.GroupVersionResource{Group: "example.listwatch.io", Version: "v1", Resource: "gadgets"}
)

// waitTimeout bounds each wait of a test for what the server does on its
// own (the garbage collector); generous for a loaded machine.
const waitTimeout = 30 * time.Second

func newClient(t *testing.T, s *testserver.Server) *client.Client {
	t.Helper()
	c, err := client.New(s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func object(apiVersion, kind, namespace, name string) client.Unstructured {
	md := map[string]any{"name": name}
	if namespace != "" {
		md["namespace"] = namespace
	}
	return client.Unstructured{"apiVersion": apiVersion, "kind": kind, "metadata": md}
}

func create(t *testing.T, c *client.Client, gvr client.GroupVersionResource, obj client.Unstructured) client.Unstructured {
	t.Helper()
	got, err := client.NewResource[client.Unstructured](c, gvr, obj.GetNamespace()).Create(t.Context(), obj, client.WriteOptions{})
	if err != nil {
		t.Fatalf("creating %s %s: %v", gvr, obj.GetName(), err)
	}
	return got
}

// TestParallelServers starts 8 servers at once, each with the CRDs, and
// checks that what is written to one is in it alone.
func TestParallelServers(t *testing.T) {
	const n = 8
	dirs := make(chan string, n)
	t.Run("group", func(t *testing.T) {
		for i := range n {
			t.Run(fmt.Sprint(i), func(t *testing.T) {
				t.Parallel()
				s := testserver.New(t, testserver.Options{CRDDirectoryPaths: []string{"testdata/crds"}, ErrorIfCRDPathMissing: true})
				dirs <- filepath.Dir(s.KubeconfigPath)
				c := newClient(t, s)
				name := fmt.Sprintf("server-%d", i)
				cm := object("v1", "ConfigMap", "default", name)
				create(t, c, configMaps, cm)
				w := object("example.listwatch.io/v1", "Widget", "default", name)
				w["spec"] = map[string]any{"color": "blue"}
				create(t, c, widgets, w)
				for _, gvr := range []client.GroupVersionResource{configMaps, widgets} {
					items, _, _, err := client.NewResource[client.Unstructured](c, gvr, "default").List(t.Context(), client.ListOptions{})
					if err != nil {
						t.Fatal(err)
					}
					var names []string
					for _, it := range items {
						names = append(names, it.GetName())
					}
					if !slices.Equal(names, []string{name}) {
						t.Errorf("%s in server %d: %v, want only [%s]", gvr, i, names, name)
					}
				}
			})
		}
	})
	close(dirs)
	seen := map[string]bool{}
	for d := range dirs {
		if seen[d] {
			t.Errorf("two servers shared the directory %s", d)
		}
		seen[d] = true
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("temporary directory %s after Stop: %v, want it removed", d, err)
		}
	}
	if len(seen) != n {
		t.Errorf("%d servers started, want %d", len(seen), n)
	}
}

// TestCRDs checks that every served version of every definition in a
// directory is served when New returns, and the definitions' files'
// other documents are skipped.
func TestCRDs(t *testing.T) {
	s := testserver.New(t, testserver.Options{CRDDirectoryPaths: []string{"testdata/crds"}})
	var names []string
	for _, crd := range s.CRDs {
		names = append(names, crd.Name())
		if !established(crd) {
			t.Errorf("%s: not Established in the answer to its creation: %v", crd.Name(), crd["status"])
		}
	}
	if want := []string{"gadgets.example.listwatch.io", "widgets.example.listwatch.io"}; !slices.Equal(names, want) {
		t.Errorf("installed %v, want %v (in file order)", names, want)
	}
	c := newClient(t, s)
	if _, err := client.NewResource[client.Unstructured](c, configMaps, "default").Get(t.Context(), "not-a-definition"); !client.IsNotFound(err) {
		t.Errorf("the ConfigMap in the CRD file: %v, want not found (skipped)", err)
	}
	g := create(t, c, gadgets, object("example.listwatch.io/v1", "Gadget", "", "g"))
	if g.GetNamespace() != "" {
		t.Errorf("gadget namespace %q: the cluster-scoped definition is not served as such", g.GetNamespace())
	}
	create(t, c, widgetsV1beta1, object("example.listwatch.io/v1beta1", "Widget", "default", "w"))
	if _, err := client.NewResource[client.Unstructured](c, widgets, "default").Get(t.Context(), "w"); err != nil {
		t.Errorf("a widget created in v1beta1, read in v1: %v", err)
	}
}

func established(crd api.Object) bool {
	status, _ := crd["status"].(map[string]any)
	conds, _ := status["conditions"].([]any)
	return slices.ContainsFunc(conds, func(c any) bool {
		m, _ := c.(map[string]any)
		return m["type"] == "Established" && m["status"] == "True"
	})
}

// TestCRDErrors checks that a start whose definitions cannot be read or
// installed fails, naming the file.
func TestCRDErrors(t *testing.T) {
	invalid := filepath.Join(t.TempDir(), "invalid.yaml")
	if err := os.WriteFile(invalid, []byte(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: wrong.example.listwatch.io
spec:
  group: example.listwatch.io
  scope: Namespaced
  names: {plural: things, kind: Thing}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	v1beta1 := filepath.Join(t.TempDir(), "old.yaml")
	if err := os.WriteFile(v1beta1, []byte("apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: old.example.listwatch.io}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(t.TempDir(), "missing")
	tests := []struct {
		name string
		opts testserver.Options
		want []string // in the error
	}{
		{"malformed YAML", testserver.Options{CRDDirectoryPaths: []string{"testdata/bad"}}, []string{filepath.Join("testdata", "bad", "broken.yaml") + ", document 2"}},
		// kube: metadata.name must be spec.names.plural + "." + spec.group.
		{"refused by the server", testserver.Options{CRDDirectoryPaths: []string{invalid}}, []string{invalid, "wrong.example.listwatch.io", "must be spec.names.plural+\".\"+spec.group"}},
		{"not v1", testserver.Options{CRDDirectoryPaths: []string{v1beta1}}, []string{v1beta1, "document 1", "apiextensions.k8s.io/v1beta1"}},
		{"missing path", testserver.Options{CRDDirectoryPaths: []string{missing}, ErrorIfCRDPathMissing: true}, []string{missing}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := testserver.Start(t.Context(), tt.opts)
			if err == nil {
				s.Stop()
				t.Fatal("started, want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
	t.Run("missing path allowed", func(t *testing.T) {
		s := testserver.New(t, testserver.Options{CRDDirectoryPaths: []string{missing}})
		if len(s.CRDs) != 0 {
			t.Errorf("CRDs %v, want none", s.CRDs)
		}
	})
}

// watchUntilDeleted opens a watch on the object of gvr named name, from
// resourceVersion rv, and returns a function that waits for its DELETED
// event.
func watchUntilDeleted(t *testing.T, c *client.Client, gvr client.GroupVersionResource, namespace, name, rv string) func() {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	t.Cleanup(cancel)
	w, err := client.NewResource[client.Unstructured](c, gvr, namespace).Watch(ctx, client.ListOptions{FieldSelector: "metadata.name=" + name, ResourceVersion: rv})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return func() {
		t.Helper()
		for ev := range w.Events() {
			if ev.Type == client.Deleted {
				return
			}
		}
		t.Fatalf("%s %s/%s not deleted: the watch ended with %v", gvr, namespace, name, w.Err())
	}
}

// TestGarbageCollection checks that deleting an owner deletes its
// dependent: the server's garbage collector runs.
func TestGarbageCollection(t *testing.T) {
	s := testserver.New(t, testserver.Options{})
	c := newClient(t, s)
	owner := create(t, c, configMaps, object("v1", "ConfigMap", "default", "owner"))
	dep := object("v1", "Secret", "default", "dependent")
	dep.Object().Metadata()["ownerReferences"] = []any{map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": owner.Object().UID(),
	}}
	dep = create(t, c, secrets, dep)
	deleted := watchUntilDeleted(t, c, secrets, "default", "dependent", dep.GetResourceVersion())
	if err := client.NewResource[client.Unstructured](c, configMaps, "default").Delete(t.Context(), "owner", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted()
}

// TestNamespaceDeletion checks that deleting a namespace deletes its
// contents and then the namespace.
func TestNamespaceDeletion(t *testing.T) {
	s := testserver.New(t, testserver.Options{CRDDirectoryPaths: []string{"testdata/crds"}})
	c := newClient(t, s)
	ns := create(t, c, namespaces, object("v1", "Namespace", "", "doomed"))
	cm := create(t, c, configMaps, object("v1", "ConfigMap", "doomed", "c"))
	w := create(t, c, widgets, object("example.listwatch.io/v1", "Widget", "doomed", "w"))
	nsDeleted := watchUntilDeleted(t, c, namespaces, "", "doomed", ns.GetResourceVersion())
	cmDeleted := watchUntilDeleted(t, c, configMaps, "doomed", "c", cm.GetResourceVersion())
	wDeleted := watchUntilDeleted(t, c, widgets, "doomed", "w", w.GetResourceVersion())
	if err := client.NewResource[client.Unstructured](c, namespaces, "").Delete(t.Context(), "doomed", client.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	cmDeleted()
	wDeleted()
	nsDeleted()
}

// TestSecure checks that a secure server serves HTTPS to the kubeconfig's
// user, authorizes the users it impersonates by RBAC, and refuses a
// request without its certificate.
func TestSecure(t *testing.T) {
	s := testserver.New(t, testserver.Options{Secure: true, CRDDirectoryPaths: []string{"testdata/crds"}})
	if !strings.HasPrefix(s.URL, "https://") {
		t.Fatalf("URL %s, want https", s.URL)
	}
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: s.KubeconfigPath})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	create(t, c, widgets, object("example.listwatch.io/v1", "Widget", "default", "w"))

	// The admin impersonates jane, whom RBAC allows what a binding gives.
	janeCfg := *cfg
	janeCfg.Impersonate = client.ImpersonationConfig{UserName: "jane"}
	jane, err := client.New(&janeCfg)
	if err != nil {
		t.Fatal(err)
	}
	defer jane.Close()
	janeWidgets := client.NewResource[client.Unstructured](jane, widgets, "default")
	if _, _, _, err := janeWidgets.List(t.Context(), client.ListOptions{}); !client.IsForbidden(err) {
		t.Fatalf("jane lists widgets without a binding: %v, want 403", err)
	}
	role := object("rbac.authorization.k8s.io/v1", "Role", "default", "widget-reader")
	role["rules"] = []any{map[string]any{"apiGroups": []any{"example.listwatch.io"}, "resources": []any{"widgets"}, "verbs": []any{"list"}}}
	create(t, c, client.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, role)
	binding := object("rbac.authorization.k8s.io/v1", "RoleBinding", "default", "jane-reads-widgets")
	binding["roleRef"] = map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "widget-reader"}
	binding["subjects"] = []any{map[string]any{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "jane"}}
	create(t, c, client.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, binding)
	if items, _, _, err := janeWidgets.List(t.Context(), client.ListOptions{}); err != nil || len(items) != 1 {
		t.Errorf("jane lists widgets with a binding: %d items, %v; want the one", len(items), err)
	}
	if _, err := janeWidgets.Create(t.Context(), object("example.listwatch.io/v1", "Widget", "default", "x"), client.WriteOptions{}); !client.IsForbidden(err) {
		t.Errorf("jane creates a widget: %v, want 403 (her role lists only)", err)
	}

	anonymous := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer anonymous.CloseIdleConnections()
	resp, err := anonymous.Get(s.URL + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a request without a certificate: %d, want 401", resp.StatusCode)
	}
}

// TestDir checks that a server given a directory keeps its store there for
// the next, which installs the same definitions again.
func TestDir(t *testing.T) {
	dir := t.TempDir()
	opts := testserver.Options{Dir: dir, CRDDirectoryPaths: []string{"testdata/crds"}}
	first, err := testserver.Start(t.Context(), opts)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(first.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	create(t, c, widgets, object("example.listwatch.io/v1", "Widget", "default", "kept"))
	c.Close()
	if err := first.Stop(); err != nil {
		t.Fatal(err)
	}
	second := testserver.New(t, opts)
	if _, err := client.NewResource[client.Unstructured](newClient(t, second), widgets, "default").Get(t.Context(), "kept"); err != nil {
		t.Errorf("the widget of the first server: %v", err)
	}
	if len(second.CRDs) != 2 {
		t.Errorf("the second server installed %d definitions, want 2", len(second.CRDs))
	}
}

// TestStopUnusedConnection checks that Stop does not wait for a
// connection that never sent a request, which a client's transport may
// have opened in advance: http.Server.Shutdown alone waits 5 s for it.
func TestStopUnusedConnection(t *testing.T) {
	s, err := testserver.Start(t.Context(), testserver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(s.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The server accepts connections in order: once a later one has been
	// served, conn has been accepted.
	if _, err := client.NewResource[client.Unstructured](newClient(t, s), namespaces, "").Get(t.Context(), "default"); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := s.Stop(); err != nil {
		t.Fatalf("Stop after %v: %v", time.Since(start), err)
	}
	// Nothing else blocks Stop for seconds; 5 s is where Shutdown gives
	// up on a new connection.
	if d := time.Since(start); d > 4*time.Second {
		t.Errorf("Stop took %v, waiting for the unused connection", d)
	}
}

// BenchmarkStart measures a start to ready (the port serving, the
// definitions served: start-ms/op) and its stop (ns/op, cpu-ms/op, the
// allocations: both).
func BenchmarkStart(b *testing.B) {
	for _, bc := range []struct {
		name string
		opts testserver.Options
	}{
		{"anonymous", testserver.Options{}},
		{"crds", testserver.Options{CRDDirectoryPaths: []string{"testdata/crds"}}},
		{"secure", testserver.Options{Secure: true}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			cpu := processCPU(b)
			var starting time.Duration // in Start: to ready, without Stop
			for b.Loop() {
				t0 := time.Now()
				s, err := testserver.Start(b.Context(), bc.opts)
				if err != nil {
					b.Fatal(err)
				}
				starting += time.Since(t0)
				if err := s.Stop(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(starting)/float64(time.Millisecond)/float64(b.N), "start-ms/op")
			b.ReportMetric(float64(processCPU(b)-cpu)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
		})
	}
}

// processCPU is the CPU time the process has used: on a shared machine, a
// start's cost that its wall time, waiting for the CPU, does not show.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestStopLeavesNoGoroutines checks that Stop returns after every
// goroutine of the server (its store, caches, controllers, watches and
// connections) has ended.
func TestStopLeavesNoGoroutines(t *testing.T) {
	s, err := testserver.Start(t.Context(), testserver.Options{Secure: true, CRDDirectoryPaths: []string{"testdata/crds"}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(s.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	w, err := client.NewResource[client.Unstructured](c, widgets, "default").Watch(t.Context(), client.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	create(t, c, widgets, object("example.listwatch.io/v1", "Widget", "default", "w"))
	if ev := <-w.Events(); ev.Type != client.Added {
		t.Fatalf("first event %v, want ADDED", ev)
	}
	if err := s.Stop(); err != nil {
		t.Fatal(err)
	}
	w.Stop()
	c.Close()
	if left := serverGoroutines(); len(left) > 0 {
		t.Errorf("%d goroutines of the server left after Stop:\n%s", len(left), strings.Join(left, "\n\n"))
	}
}

// serverGoroutines are the stacks of the goroutines running code of the
// server or its store.
func serverGoroutines() []string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "listwatch/listwatch/internal/") || strings.Contains(g, "listwatch/listwatch/storage/") || strings.Contains(g, "go.etcd.io/bbolt") {
			out = append(out, g)
		}
	}
	return out
}
