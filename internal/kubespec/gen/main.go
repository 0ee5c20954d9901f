// Command gen writes internal/kubespec's data file from the files kube
// publishes in its module: api/discovery (each group-version's resources)
// and api/openapi-spec/v3 (their schemas), for the group-versions a
// kube-apiserver of openapi.KubeVersion serves by default, and the protobuf
// messages of their kinds from kube's staging modules (proto.go).
//
// The default set: kube-apiserver enables every GA version its storage
// providers have and disables every beta and alpha one
// (pkg/controlplane/instance.go DefaultAPIResourceConfigSource and
// pkg/controlplane/apiserver DefaultGenericAPIResourceConfigSource), and the
// resources of GA versions that its storage providers gate on a feature
// (clustertrustbundles, podcertificaterequests, storageversionmigrations)
// have their gates on by default in 1.37 (pkg/features/kube_features.go). So
// a group-version is served when its version has no alpha or beta suffix.
//
// Run by `go generate ./internal/kubespec`; the output is deterministic.
package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/openapi"
)

const module = "k8s.io/kubernetes"

// gaVersion matches the versions served by default.
var gaVersion = regexp.MustCompile(`^v[0-9]+$`)

func main() {
	out := flag.String("o", "spec.json.gz", "the data file to write")
	flag.Parse()
	if err := run(*out); err != nil {
		log.Fatal(err)
	}
}

func run(out string) error {
	dir, sum, err := download(module + "@" + openapi.KubeVersion)
	if err != nil {
		return err
	}
	spec := kubespec.Spec{Source: kubespec.Source{Module: module, Version: openapi.KubeVersion, Sum: sum}, Schemas: map[string]json.RawMessage{}}
	files, err := filepath.Glob(filepath.Join(dir, "api/discovery/*.json"))
	if err != nil {
		return err
	}
	var groups api.APIGroupList
	if err := readJSON(filepath.Join(dir, "api/discovery/apis.json"), &groups); err != nil {
		return err
	}
	for _, g := range groups.Groups {
		spec.Groups = append(spec.Groups, g.Name)
	}
	spec.Source.Files = append(spec.Source.Files, "api/discovery/apis.json")
	schemas := map[string]any{}
	for _, f := range files {
		gv, ok := discoveryGroupVersion(filepath.Base(f))
		if !ok {
			continue
		}
		var list api.APIResourceList
		if err := readJSON(f, &list); err != nil {
			return err
		}
		if list.GroupVersion != gv {
			return fmt.Errorf("%s: groupVersion %q, want %q", f, list.GroupVersion, gv)
		}
		list.TypeMeta = api.TypeMeta{} // the same in every file
		spec.GroupVersions = append(spec.GroupVersions, list)
		name := strings.TrimSuffix(filepath.Base(f), ".json") + "_openapi.json"
		var doc struct {
			Components struct {
				Schemas map[string]any `json:"schemas"`
			} `json:"components"`
		}
		if err := readJSON(filepath.Join(dir, "api/openapi-spec/v3", name), &doc); err != nil {
			return err
		}
		spec.Source.Files = append(spec.Source.Files, "api/discovery/"+filepath.Base(f), "api/openapi-spec/v3/"+name)
		for k, s := range doc.Components.Schemas {
			if prev, ok := schemas[k]; ok && !sameButGVK(prev, s) {
				return fmt.Errorf("definition %s differs between group-versions", k)
			}
			if _, ok := schemas[k]; !ok || gv == "v1" {
				schemas[k] = s // the core group's form of a shared definition
			}
		}
	}
	spec.Kinds = map[string]string{}
	for k, s := range schemas {
		if spec.Schemas[k], err = json.Marshal(s); err != nil {
			return err
		}
		gvks, _ := s.(map[string]any)["x-kubernetes-group-version-kind"].([]any)
		for _, e := range gvks {
			m, _ := e.(map[string]any)
			key := fmt.Sprintf("%v/%v/%v", m["group"], m["version"], m["kind"])
			if prev, ok := spec.Kinds[key]; ok && prev != k {
				return fmt.Errorf("kind %s has two definitions, %s and %s", key, prev, k)
			}
			spec.Kinds[key] = k
		}
	}
	if spec.Protobuf, err = protobufData(spec.GroupVersions, spec.Kinds); err != nil {
		return err
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf) // no name or time in the header: deterministic
	if err := json.NewEncoder(zw).Encode(spec); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// discoveryGroupVersion returns the group-version of a discovery file
// served by default: api__v1.json, apis__<group>__<version>.json.
func discoveryGroupVersion(name string) (string, bool) {
	parts := strings.Split(strings.TrimSuffix(name, ".json"), "__")
	switch {
	case len(parts) == 2 && parts[0] == "api" && parts[1] == "v1":
		return "v1", true
	case len(parts) == 3 && parts[0] == "apis" && gaVersion.MatchString(parts[2]):
		return parts[1] + "/" + parts[2], true
	}
	return "", false
}

// sameButGVK reports whether two forms of a shared definition differ only
// in the group-version-kinds listed (each group's document lists its own
// for DeleteOptions and WatchEvent).
func sameButGVK(a, b any) bool {
	strip := func(v any) any {
		m, ok := v.(map[string]any)
		if !ok {
			return v
		}
		c := make(map[string]any, len(m))
		for k, x := range m {
			if k != "x-kubernetes-group-version-kind" {
				c[k] = x
			}
		}
		return c
	}
	return reflect.DeepEqual(strip(a), strip(b))
}

// download fetches the module through the module proxy (or finds it in the
// module cache) and returns its directory and go.sum hash.
func download(modver string) (dir, sum string, err error) {
	cmd := exec.Command("go", "mod", "download", "-json", modver)
	cmd.Stderr = os.Stderr
	b, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go mod download %s: %w", modver, err)
	}
	var m struct{ Dir, Sum, Error string }
	if err := json.Unmarshal(b, &m); err != nil {
		return "", "", err
	}
	if m.Error != "" {
		return "", "", fmt.Errorf("go mod download %s: %s", modver, m.Error)
	}
	return m.Dir, m.Sum, nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
