// Package manifests reads the real manifests of testdata/manifests (see its
// README) for the differential tests.
package manifests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"
)

// Each calls f with every object of the manifests below dir: its name
// (file#Kind), type and JSON. Empty documents are skipped.
func Each(t testing.TB, dir string, f func(name string, tm metav1.TypeMeta, js []byte)) {
	t.Helper()
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".yaml") {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
		for {
			doc, err := r.Read()
			if errors.Is(err, io.EOF) {
				return nil
			}
			if err != nil {
				return err
			}
			js, err := yaml.YAMLToJSON(doc)
			if err != nil {
				return err
			}
			var tm metav1.TypeMeta
			if err := json.Unmarshal(js, &tm); err != nil || tm.Kind == "" {
				continue // an empty document
			}
			rel, _ := filepath.Rel(dir, path)
			f(filepath.ToSlash(rel)+"#"+tm.Kind, tm, js)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}
