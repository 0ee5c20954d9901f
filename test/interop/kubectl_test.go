package interop

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/testwait"
)

// kubectlTimeout bounds one kubectl command.
const kubectlTimeout = 2 * time.Minute

// kubectl runs one kubectl binary against one server, with its own
// kubeconfig and HOME (so discovery caches never leak between runs).
type kubectl struct {
	bin    string
	env    []string
	server string
	// current is true for the kubectl built from k8s.io/kubectl, false for
	// Debian's kubernetes-client (1.20).
	current bool
}

// kubectls returns the kubectls to test against server: Debian's (skipped
// with a message when absent) and the current one built from k8s.io/kubectl.
func kubectls(t *testing.T) map[string]func(t *testing.T, server string) kubectl {
	return map[string]func(t *testing.T, server string) kubectl{
		"debian": func(t *testing.T, server string) kubectl {
			bin, err := exec.LookPath("kubectl")
			if err != nil {
				t.Skip("Debian's kubectl is not installed (apt-get install -y kubernetes-client; .ci/run does)")
			}
			return newKubectl(t, bin, server, false)
		},
		"current": func(t *testing.T, server string) kubectl {
			return newKubectl(t, BuildOnce(t, ".", "./cmd/kubectl"), server, true)
		},
	}
}

func newKubectl(t *testing.T, bin, server string, current bool) kubectl {
	t.Helper()
	home := t.TempDir()
	config := filepath.Join(home, "kubeconfig")
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: lw, cluster: {server: %q}}]
users: [{name: lw, user: {}}]
contexts: [{name: lw, context: {cluster: lw, user: lw, namespace: default}}]
current-context: lw
`, server)
	if err := os.WriteFile(config, []byte(kc), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "HOME="+home, "KUBECONFIG="+config, "KUBECACHEDIR="+filepath.Join(home, "cache"))
	return kubectl{bin: bin, env: env, server: server, current: current}
}

// run runs kubectl with args and returns its combined output.
func (k kubectl) run(t *testing.T, extraEnv []string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(k.bin, args...)
	cmd.Env = append(k.env, extraEnv...)
	timer := time.AfterFunc(kubectlTimeout, func() { cmd.Process.Kill() })
	defer timer.Stop()
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// must runs kubectl and fails the test if it fails.
func (k kubectl) must(t *testing.T, args ...string) string {
	t.Helper()
	out, err := k.run(t, nil, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

// running is a kubectl left running (get --watch), its output read as it comes.
type running struct {
	mu  sync.Mutex
	out bytes.Buffer
	cmd *exec.Cmd
}

func (r *running) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

// start runs kubectl in the background until the test ends.
func (k kubectl) start(t *testing.T, args ...string) *running {
	t.Helper()
	r := &running{cmd: exec.Command(k.bin, args...)}
	r.cmd.Env, r.cmd.Stdout, r.cmd.Stderr = k.env, r, r
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.cmd.Process.Kill(); _ = r.cmd.Wait() })
	return r
}

// expect waits, with a deadline, until the output matches pattern.
func (r *running) expect(t *testing.T, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	testwait.UntilNil(t, kubectlTimeout, fmt.Sprintf("kubectl %v to print %q", r.cmd.Args[1:], pattern), func() error {
		r.mu.Lock()
		defer r.mu.Unlock()
		if out := r.out.String(); !re.MatchString(out) {
			return errors.New(out)
		}
		return nil
	})
}

// contains fails the test unless out matches every pattern.
func contains(t *testing.T, out string, patterns ...string) {
	t.Helper()
	for _, p := range patterns {
		if !regexp.MustCompile(p).MatchString(out) {
			t.Errorf("output does not match %q:\n%s", p, out)
		}
	}
}

// getObject reads an object from the server over HTTP; code is its status.
func getObject(t *testing.T, server, path string) (int, map[string]any) {
	t.Helper()
	code, b := fetch(t, "GET", server+path, nil, nil)
	var obj map[string]any
	if err := json.Unmarshal(b, &obj); err != nil {
		t.Fatalf("GET %s: not JSON: %v: %s", path, err, b)
	}
	return code, obj
}

// field returns the value at path in obj, or nil.
func field(obj map[string]any, path ...string) any {
	var v any = obj
	for _, p := range path {
		m, _ := v.(map[string]any)
		v = m[p]
	}
	return v
}

// writeFile writes content to name in dir, executable (a script), and
// returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func listwatchBin(t *testing.T) string {
	return BuildOnce(t, "../..", "./cmd/listwatch")
}

func TestKubectl(t *testing.T) { eachKubectl(t, scenario) }

// eachKubectl runs f with each kubectl, against a server of its own.
func eachKubectl(t *testing.T, f func(t *testing.T, k kubectl), args ...string) {
	bin := listwatchBin(t)
	for name, newK := range kubectls(t) {
		t.Run(name, func(t *testing.T) {
			lw := StartListwatch(t, bin, append([]string{"--data-dir", t.TempDir(), "--unsafe-no-fsync"}, args...)...)
			f(t, newK(t, lw.URL))
		})
	}
}

func TestKubectlEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	bin := listwatchBin(t)
	cli := RunEtcd(t)
	lw := StartListwatch(t, bin, "--storage", "etcd", "--etcd-endpoints", "http://"+cli.Endpoints()[0], "--etcd-prefix", "/kubectl-test")
	scenario(t, kubectls(t)["current"](t, lw.URL))
}

// scenario is what a user does with kubectl, checked on kubectl's output and
// on the server's state.
func scenario(t *testing.T, k kubectl) {
	dir := t.TempDir()
	const ns = "/api/v1/namespaces/lwtest"
	const cms = ns + "/configmaps/"
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow()
		}
	}
	step("create-namespace", func(t *testing.T) {
		contains(t, k.must(t, "create", "namespace", "lwtest"), `namespace/lwtest created`)
		if code, obj := getObject(t, k.server, ns); code != 200 || field(obj, "status", "phase") != "Active" {
			t.Fatalf("namespace on the server: %d %v", code, obj)
		}
	})
	step("create-configmap", func(t *testing.T) {
		contains(t, k.must(t, "-n", "lwtest", "create", "configmap", "cm1", "--from-literal=k=v"), `configmap/cm1 created`)
		if _, obj := getObject(t, k.server, cms+"cm1"); field(obj, "data", "k") != "v" {
			t.Fatalf("cm1 on the server: %v", obj)
		}
	})
	step("apply", func(t *testing.T) { applySteps(t, k, dir) })
	step("validation", func(t *testing.T) {
		bad := writeFile(t, dir, "bad.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bad, namespace: lwtest}\nbogus: 1\n")
		out, err := k.run(t, nil, "create", "-f", bad)
		if err == nil {
			t.Fatalf("an unknown field was accepted:\n%s", out)
		}
		contains(t, out, `unknown field "bogus"`)
		if code, _ := getObject(t, k.server, cms+"bad"); code != 404 {
			t.Fatalf("the invalid object was stored: %d", code)
		}
	})
	step("get-yaml", func(t *testing.T) {
		_, obj := getObject(t, k.server, cms+"cm2")
		out := k.must(t, "-n", "lwtest", "get", "configmap", "cm2", "-o", "yaml")
		contains(t, out, `(?m)^  a: "2"$`, `(?m)^  resourceVersion: "`+field(obj, "metadata", "resourceVersion").(string)+`"$`)
	})
	step("get-table", func(t *testing.T) {
		out := k.must(t, "-n", "lwtest", "get", "configmaps")
		contains(t, out, `(?m)^NAME\s+DATA\s+AGE$`, `(?m)^cm1\s+1\s+\S+$`, `(?m)^cm2\s+1\s+\S+$`)
	})
	step("get-watch", func(t *testing.T) {
		w := k.start(t, "-n", "lwtest", "get", "configmaps", "--watch")
		w.expect(t, `(?m)^cm1\s+1\s+\S+$`) // the current state first
		k.must(t, "-n", "lwtest", "create", "configmap", "watched", "--from-literal=a=1", "--from-literal=b=2")
		w.expect(t, `(?m)^watched\s+2\s+\S+$`)
	})
	step("label", func(t *testing.T) {
		contains(t, k.must(t, "-n", "lwtest", "label", "configmap", "cm1", "env=test"), `configmap/cm1 labeled`)
		if _, obj := getObject(t, k.server, cms+"cm1"); field(obj, "metadata", "labels", "env") != "test" {
			t.Fatalf("cm1 labels on the server: %v", field(obj, "metadata", "labels"))
		}
	})
	step("patch-merge", func(t *testing.T) {
		contains(t, k.must(t, "-n", "lwtest", "patch", "configmap", "cm1", "--type", "merge", "-p", `{"data":{"m":"1"}}`), `configmap/cm1 patched`)
		if _, obj := getObject(t, k.server, cms+"cm1"); field(obj, "data", "m") != "1" {
			t.Fatalf("cm1 on the server: %v", obj)
		}
	})
	step("patch-json", func(t *testing.T) {
		contains(t, k.must(t, "-n", "lwtest", "patch", "configmap", "cm1", "--type", "json", "-p", `[{"op":"add","path":"/data/j","value":"2"}]`), `configmap/cm1 patched`)
		if _, obj := getObject(t, k.server, cms+"cm1"); field(obj, "data", "j") != "2" || field(obj, "data", "m") != "1" {
			t.Fatalf("cm1 on the server: %v", obj)
		}
	})
	step("edit", func(t *testing.T) {
		editor := writeFile(t, dir, "editor.sh", "#!/bin/sh\nsed -i 's/^  k: v$/  k: edited/' \"$1\"\n")
		out, err := k.run(t, []string{"KUBE_EDITOR=" + editor}, "-n", "lwtest", "edit", "configmap", "cm1")
		if err != nil {
			t.Fatalf("kubectl edit: %v\n%s", err, out)
		}
		contains(t, out, `configmap/cm1 edited`)
		if _, obj := getObject(t, k.server, cms+"cm1"); field(obj, "data", "k") != "edited" {
			t.Fatalf("cm1 on the server: %v", obj)
		}
	})
	step("explain", func(t *testing.T) {
		contains(t, k.must(t, "explain", "configmap.data"), `Data contains the configuration data`)
	})
	step("api-resources", func(t *testing.T) {
		contains(t, k.must(t, "api-resources"), `(?m)^configmaps\s+cm\s+v1\s+true\s+ConfigMap$`, `(?m)^namespaces\s+ns\s+v1\s+false\s+Namespace$`,
			`(?m)^leases\s+coordination.k8s.io/v1\s+true\s+Lease$`)
	})
	step("lease", func(t *testing.T) {
		f := writeFile(t, dir, "lease.yaml", "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata: {name: lock, namespace: lwtest}\n"+
			"spec: {holderIdentity: me, leaseDurationSeconds: 15, renewTime: \"2024-01-01T00:00:00.000001Z\"}\n")
		contains(t, k.must(t, "create", "-f", f), `lease.coordination.k8s.io/lock created`)
		contains(t, k.must(t, "-n", "lwtest", "get", "leases"), `(?m)^NAME\s+HOLDER\s+AGE$`, `(?m)^lock\s+me\s+\S+$`)
		contains(t, k.must(t, "explain", "lease.spec.renewTime"), `renewTime is a time when the current holder of a lease has last`)
	})
	if k.current {
		step("apply-server-side", func(t *testing.T) {
			f := writeFile(t, dir, "ssa.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ssa, namespace: lwtest}\ndata: {s: \"1\"}\n")
			contains(t, k.must(t, "apply", "--server-side", "-f", f), `configmap/ssa serverside-applied`)
			_, obj := getObject(t, k.server, cms+"ssa")
			mf, _ := json.Marshal(field(obj, "metadata", "managedFields"))
			if field(obj, "data", "s") != "1" || !strings.Contains(string(mf), `"manager":"kubectl"`) || !strings.Contains(string(mf), `"operation":"Apply"`) {
				t.Fatalf("ssa on the server: %v", obj)
			}
		})
	}
	if k.current {
		step("apply-client-side-then-server-side", func(t *testing.T) { applyUpgradeSteps(t, k, dir) })
	}
	step("crd", func(t *testing.T) { crdSteps(t, k, dir) })
	step("delete", func(t *testing.T) {
		contains(t, k.must(t, "-n", "lwtest", "delete", "configmap", "cm1"), `configmap "cm1" deleted`)
		if code, _ := getObject(t, k.server, cms+"cm1"); code != 404 {
			t.Fatalf("cm1 after delete: %d", code)
		}
	})
}

// applySteps applies a file three times: it creates, it changes, and an
// unchanged file changes nothing.
func applySteps(t *testing.T, k kubectl, dir string) {
	f := func(v string) string {
		return writeFile(t, dir, "cm2.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm2\n  namespace: lwtest\ndata:\n  a: \""+v+"\"\n")
	}
	contains(t, k.must(t, "apply", "-f", f("1")), `configmap/cm2 created`)
	contains(t, k.must(t, "apply", "-f", f("2")), `configmap/cm2 configured`)
	_, obj := getObject(t, k.server, "/api/v1/namespaces/lwtest/configmaps/cm2")
	if field(obj, "data", "a") != "2" {
		t.Fatalf("cm2 on the server: %v", obj)
	}
	contains(t, k.must(t, "apply", "-f", f("2")), `configmap/cm2 unchanged`)
	_, again := getObject(t, k.server, "/api/v1/namespaces/lwtest/configmaps/cm2")
	if rv := field(again, "metadata", "resourceVersion"); rv != field(obj, "metadata", "resourceVersion") {
		t.Fatalf("an unchanged apply wrote: resourceVersion %v -> %v", field(obj, "metadata", "resourceVersion"), rv)
	}
}

// applyUpgradeSteps applies a file client-side, then the same file
// server-side: kubectl (1.26+) moves the client-side manager's fields to
// its "kubectl" Apply entry with a JSON Patch of managedFields
// (k8s.io/client-go/util/csaupgrade) before it applies. The data stays, and
// managedFields are kube's: the Apply managers own what they apply, the
// client-side manager is gone.
func applyUpgradeSteps(t *testing.T, k kubectl, dir string) {
	f := writeFile(t, dir, "upgrade.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: upgrade, namespace: lwtest}\ndata: {u: \"1\"}\n")
	contains(t, k.must(t, "apply", "-f", f), `configmap/upgrade created`)
	contains(t, k.must(t, "apply", "--server-side", "-f", f), `configmap/upgrade serverside-applied`)
	_, obj := getObject(t, k.server, "/api/v1/namespaces/lwtest/configmaps/upgrade")
	if field(obj, "data", "u") != "1" || field(obj, "metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration") == nil {
		t.Fatalf("upgrade on the server: %v", obj)
	}
	got := map[string]any{}
	entries, _ := field(obj, "metadata", "managedFields").([]any)
	for _, e := range entries {
		e, _ := e.(map[string]any)
		got[fmt.Sprint(e["manager"], "/", e["operation"])] = e["fieldsV1"]
	}
	var want map[string]any
	if err := json.Unmarshal([]byte(`{
		"kubectl/Apply": {"f:data": {"f:u": {}}},
		"kubectl-last-applied/Apply": {"f:metadata": {"f:annotations": {"f:kubectl.kubernetes.io/last-applied-configuration": {}}}}}`), &want); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("managedFields (-want +got)\n%s", diff)
	}
}

const crdYAML = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names: {plural: crontabs, singular: crontab, kind: CronTab, shortNames: [ct]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              cronSpec: {type: string}
              replicas: {type: integer}
    additionalPrinterColumns:
    - {name: Spec, type: string, jsonPath: .spec.cronSpec}
    - {name: Replicas, type: integer, jsonPath: .spec.replicas}
`

// crdSteps defines a CRD, waits for it, creates and lists custom resources
// and deletes the definition.
func crdSteps(t *testing.T, k kubectl, dir string) {
	contains(t, k.must(t, "apply", "-f", writeFile(t, dir, "crd.yaml", crdYAML)), `customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created`)
	k.must(t, "wait", "--for=condition=Established", "--timeout=60s", "crd/crontabs.stable.example.com")
	ct := writeFile(t, dir, "ct.yaml", "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata: {name: every-minute, namespace: lwtest}\nspec: {cronSpec: \"* * * * *\", replicas: 3}\n")
	contains(t, k.must(t, "create", "-f", ct), `crontab.stable.example.com/every-minute created`)
	if _, obj := getObject(t, k.server, "/apis/stable.example.com/v1/namespaces/lwtest/crontabs/every-minute"); field(obj, "spec", "replicas") != float64(3) {
		t.Fatalf("the custom resource on the server: %v", obj)
	}
	out := k.must(t, "-n", "lwtest", "get", "crontabs")
	contains(t, out, `(?m)^NAME\s+SPEC\s+REPLICAS$`, `(?m)^every-minute\s+\* \* \* \* \*\s+3$`)
	w := k.start(t, "-n", "lwtest", "get", "crontabs", "--watch", "--output-watch-events")
	w.expect(t, `(?m)^ADDED\s+every-minute\s+\* \* \* \* \*\s+3$`)
	k.must(t, "-n", "lwtest", "patch", "crontab", "every-minute", "--type", "merge", "-p", `{"spec":{"replicas":5}}`)
	w.expect(t, `(?m)^MODIFIED\s+every-minute\s+\* \* \* \* \*\s+5$`)
	contains(t, k.must(t, "delete", "crd", "crontabs.stable.example.com"), `customresourcedefinition.apiextensions.k8s.io "crontabs.stable.example.com" deleted`)
}

// TestRestart checks that objects and their resourceVersions survive a
// restart of the binary on the same data directory.
func TestRestart(t *testing.T) {
	bin := listwatchBin(t)
	data := t.TempDir()
	lw := StartListwatch(t, bin, "--data-dir", data, "--unsafe-no-fsync")
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"keep"},"data":{"k":"v"}}`
	resp, err := http.Post(lw.URL+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %s", resp.Status)
	}
	_, before := getObject(t, lw.URL, "/api/v1/namespaces/default/configmaps/keep")
	_, listBefore := getObject(t, lw.URL, "/api/v1/namespaces/default/configmaps")
	if err := lw.Stop(); err != nil {
		t.Fatal(err)
	}

	lw = StartListwatch(t, bin, "--data-dir", data, "--unsafe-no-fsync")
	code, after := getObject(t, lw.URL, "/api/v1/namespaces/default/configmaps/keep")
	if code != 200 || field(after, "metadata", "resourceVersion") != field(before, "metadata", "resourceVersion") ||
		field(after, "metadata", "uid") != field(before, "metadata", "uid") || field(after, "data", "k") != "v" {
		t.Fatalf("after restart: %d %v, want %v", code, after, before)
	}
	_, listAfter := getObject(t, lw.URL, "/api/v1/namespaces/default/configmaps")
	// The store's revision goes on from where it was (the controller
	// Lease, released at the stop and taken at the start, moves it on).
	got, _ := strconv.ParseInt(fmt.Sprint(field(listAfter, "metadata", "resourceVersion")), 10, 64)
	want, _ := strconv.ParseInt(fmt.Sprint(field(listBefore, "metadata", "resourceVersion")), 10, 64)
	if want == 0 || got < want {
		t.Errorf("list resourceVersion after restart = %d, want at least %d", got, want)
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	RemoveBinaries()
	os.Exit(code)
}
