package kubespec_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/kubespec"
	"github.com/listwatch/listwatch/internal/server/openapi"
)

// The data describes the release the server says it serves.
func TestVersionIsServed(t *testing.T) {
	src := kubespec.Load().Source
	if src.Version != openapi.KubeVersion || src.Module != "k8s.io/kubernetes" || !strings.HasPrefix(src.Sum, "h1:") {
		t.Fatalf("data from %s@%s (%s), want k8s.io/kubernetes@%s", src.Module, src.Version, src.Sum, openapi.KubeVersion)
	}
}

// Every kind discovery lists has its definition, which names it.
func TestKindsHaveDefinitions(t *testing.T) {
	for _, gv := range kubespec.Load().GroupVersions {
		group, version, ok := strings.Cut(gv.GroupVersion, "/")
		if !ok {
			group, version = "", group
		}
		for _, r := range gv.APIResources {
			if strings.Contains(r.Name, "/") || r.Kind == "" {
				continue
			}
			name := kubespec.DefinitionName(group, version, r.Kind)
			s := kubespec.Schema(name)
			if s == nil {
				t.Errorf("%s %s: no definition", gv.GroupVersion, r.Kind)
				continue
			}
			if _, ok := s["properties"].(map[string]any); !ok {
				t.Errorf("%s: no properties", name)
			}
		}
	}
}

// Served group-versions are kube's defaults: GA versions only, core first.
func TestGroupVersions(t *testing.T) {
	gvs := kubespec.Load().GroupVersions
	if len(gvs) == 0 || gvs[0].GroupVersion != "v1" {
		t.Fatalf("first group-version %v, want v1", gvs)
	}
	for _, gv := range gvs {
		if strings.Contains(gv.GroupVersion, "alpha") || strings.Contains(gv.GroupVersion, "beta") {
			t.Errorf("%s is not served by default", gv.GroupVersion)
		}
	}
	for _, want := range []string{"apps/v1", "batch/v1", "networking.k8s.io/v1", "autoscaling/v2", "resource.k8s.io/v1"} {
		if !containsGV(gvs, want) {
			t.Errorf("%s missing", want)
		}
	}
}

func containsGV(gvs []api.APIResourceList, want string) bool {
	for _, gv := range gvs {
		if gv.GroupVersion == want {
			return true
		}
	}
	return false
}

// Every served kind but apiextensions' (described by hand) has its
// protobuf message, and every message a message uses is recorded.
func TestProtobufMessages(t *testing.T) {
	pb := kubespec.Load().Protobuf
	for _, gv := range kubespec.Load().GroupVersions {
		if gv.GroupVersion == "apiextensions.k8s.io/v1" {
			continue
		}
		key := gv.GroupVersion
		if !strings.Contains(key, "/") {
			key = "/" + key
		}
		for _, r := range gv.APIResources {
			if strings.Contains(r.Name, "/") {
				continue
			}
			if _, ok := pb.Messages[pb.Kinds[key+"/"+r.Kind]]; !ok {
				t.Errorf("%s %s: no protobuf message", gv.GroupVersion, r.Kind)
			}
		}
	}
	for name, m := range pb.Messages {
		for _, f := range m.Fields {
			if _, ok := pb.Messages[f.Type]; !ok && !slices.Contains([]string{"string", "int32", "int64", "bool", "double", "bytes"}, f.Type) {
				t.Errorf("%s.%s: type %s not recorded", name, f.Name, f.Type)
			}
		}
	}
	if len(pb.Sources) != 3 || pb.Sources[0].Module != "k8s.io/api" || !strings.HasPrefix(pb.Sources[0].Sum, "h1:") {
		t.Errorf("sources %+v", pb.Sources)
	}
}
