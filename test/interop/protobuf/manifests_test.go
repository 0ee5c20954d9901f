package protobuf_test

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"

	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/openapi"
	"github.com/listwatch/listwatch/test/interop"
)

// manifestGlobs are kube's own manifests in module k8s.io/kubernetes at the
// version served: kubectl's test data (Deployments, Pods, Services,
// ReplicaSets, ConfigMaps, lists, CSRs...) and the documentation's examples.
var manifestGlobs = []string{"hack/testdata/*.yaml", "hack/testdata/*.json", "hack/testdata/*/*.yaml", "test/fixtures/doc-yaml/*/*.yaml"}

// TestKubeManifests runs the checks of TestEveryServedKind on real
// objects: each document of kube's manifests whose kind is served, decoded
// by k8s.io/api's decoder (invalid ones, made to be rejected, are skipped).
func TestKubeManifests(t *testing.T) {
	s := servedScheme(t)
	decoder := serializer.NewCodecFactory(s).UniversalDeserializer()
	dir := interop.KubeModule(t, openapi.KubeVersion)
	checked := map[string]int{}
	for _, glob := range manifestGlobs {
		files, err := filepath.Glob(filepath.Join(dir, glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			r := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
			for {
				var raw runtime.RawExtension
				if err := r.Decode(&raw); errors.Is(err, io.EOF) {
					break
				} else if err != nil {
					break // a document made to be invalid
				}
				if len(bytes.TrimSpace(raw.Raw)) == 0 {
					continue
				}
				obj, gvk, err := decoder.Decode(raw.Raw, nil, nil)
				if err != nil || !protobuf.Supports(gvk.GroupVersion().String(), gvk.Kind) {
					continue
				}
				rel, _ := filepath.Rel(dir, file)
				checkRoundTrip(t, s, rel, obj)
				checked[gvk.Kind]++
			}
		}
	}
	t.Logf("checked %v", checked)
	if len(checked) < 8 {
		t.Errorf("only %v checked", checked)
	}
}
