package repotest

import (
	"encoding/json"
	"io"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/listwatch/listwatch"

// pkg is what go list says of one package.
type pkg struct {
	ImportPath string
	Doc        string
	Deps       []string
}

// listPackages runs go list over the product module.
func listPackages(t *testing.T) []pkg {
	t.Helper()
	cmd := exec.Command("go", "list", "-json=ImportPath,Doc,Deps", module+"/...")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decoding go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		t.Fatal("go list found no packages")
	}
	return pkgs
}

func TestPackageDocs(t *testing.T) {
	for _, p := range listPackages(t) {
		if strings.TrimSpace(p.Doc) == "" {
			t.Errorf("%s has no package comment", p.ImportPath)
		}
	}
}

// libraries are the public packages a program imports to talk to any
// Kubernetes-style API server: the client module's; they must not drag in
// the server or storage.
var libraries = []string{"client"}

// forbidden are the heavy dependencies that live only in test/interop:
// kube's server and client, and its API types (k8s.io/api and the
// libraries built on them).
var forbidden = []string{"k8s.io/apiserver", "k8s.io/client-go", "k8s.io/api/", "k8s.io/pod-security-admission", "k8s.io/component-helpers"}

func TestForbiddenImports(t *testing.T) {
	for _, p := range listPackages(t) {
		for _, dep := range p.Deps {
			if slices.ContainsFunc(forbidden, func(f string) bool { return strings.HasPrefix(dep, f) }) {
				t.Errorf("%s imports %s: the product must not depend on it", p.ImportPath, dep)
			}
		}
		// testwait fails tests; a program waits on events.
		if slices.Contains(p.Deps, module+"/internal/testwait") {
			t.Errorf("%s imports internal/testwait outside its tests", p.ImportPath)
		}
		if !isLibrary(p.ImportPath) {
			continue
		}
		for _, dep := range p.Deps {
			if strings.HasPrefix(dep, module+"/internal/") || strings.HasPrefix(dep, module+"/storage") {
				t.Errorf("library package %s imports %s", p.ImportPath, dep)
			}
		}
	}
}

func isLibrary(path string) bool {
	for _, l := range libraries {
		if path == module+"/"+l || strings.HasPrefix(path, module+"/"+l+"/") {
			return true
		}
	}
	return false
}

// serverOnly are module path prefixes of the server's own dependencies,
// which a program importing the client library must not inherit.
var serverOnly = []string{
	"go.etcd.io/", "google.golang.org/grpc", "github.com/spf13/cobra", "github.com/prometheus/",
	"github.com/go-json-experiment/", "github.com/google/cel-go", "k8s.io/",
}

// TestClientModuleGraph: the client library's module graph (what a
// controller importing it inherits) holds none of the server's
// dependencies, nor the server's module.
func TestClientModuleGraph(t *testing.T) {
	cmd := exec.Command("go", "list", "-m", "all")
	cmd.Dir = "../../client"
	cmd.Env = append(cmd.Environ(), "GOWORK=off")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -m all in client/: %v", err)
	}
	mods := strings.Fields(string(out))
	if len(mods) == 0 || mods[0] != module+"/client" {
		t.Fatalf("go list -m all in client/ = %q, want the client module first", mods)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		path := strings.Fields(line)[0]
		if path == module {
			t.Errorf("the client module requires the server's module")
		}
		for _, p := range serverOnly {
			if strings.HasPrefix(path, p) {
				t.Errorf("the client module's graph holds %s, a dependency of the server", line)
			}
		}
	}
}
