package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
)

// manifest is one object read from a file, with where it came from.
type manifest struct {
	source string
	obj    api.Object
}

// readManifests reads the objects of every -f argument: a file, a
// directory (its .yaml, .yml and .json files, in name order, not
// recursively, as kubectl without -R) or "-" for stdin. Files hold YAML or
// JSON, several documents separated by "---" lines; a List's items are
// objects of their own.
func readManifests(paths []string, stdin io.Reader) ([]manifest, error) {
	var out []manifest
	for _, p := range paths {
		files, err := manifestFiles(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			ms, err := readManifestFile(f, stdin)
			if err != nil {
				return nil, err
			}
			out = append(out, ms...)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no objects passed with -f")
	}
	return out, nil
}

// manifestFiles expands a -f argument into files.
func manifestFiles(p string) ([]string, error) {
	if p == "-" {
		return []string{p}, nil
	}
	info, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	var files []string
	for _, e := range entries {
		switch filepath.Ext(e.Name()) {
		case ".yaml", ".yml", ".json":
			if !e.IsDir() {
				files = append(files, filepath.Join(p, e.Name()))
			}
		}
	}
	slices.Sort(files)
	return files, nil
}

func readManifestFile(name string, stdin io.Reader) ([]manifest, error) {
	var data []byte
	var err error
	if name == "-" {
		data, err = io.ReadAll(stdin)
	} else {
		data, err = os.ReadFile(name)
	}
	if err != nil {
		return nil, fmt.Errorf("reading manifests: %w", err)
	}
	var out []manifest
	for i, doc := range splitDocuments(data) {
		objs, err := decodeDocument(doc)
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", name, i+1, err)
		}
		for _, o := range objs {
			out = append(out, manifest{source: name, obj: o})
		}
	}
	return out, nil
}

// splitDocuments splits YAML at "---" lines; JSON has none and is one
// document.
func splitDocuments(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, len(data)+1)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "---") && strings.TrimSpace(strings.TrimPrefix(line, "---")) == "" {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.WriteString(line + "\n")
	}
	return append(docs, cur.Bytes())
}

// decodeDocument reads one document's object (none for an empty one, the
// items of a List).
func decodeDocument(doc []byte) ([]api.Object, error) {
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	if t := strings.TrimSpace(string(j)); t == "null" || t == "" {
		return nil, nil
	}
	obj, err := api.ParseObject(j)
	if err != nil {
		return nil, err
	}
	items, isList := obj["items"].([]any)
	if !isList || !strings.HasSuffix(obj.Kind(), "List") {
		return []api.Object{obj}, checkManifest(obj)
	}
	var out []api.Object
	for _, it := range items {
		m, ok := it.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("a List item is not an object")
		}
		if err := checkManifest(m); err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

func checkManifest(o api.Object) error {
	switch {
	case o.APIVersion() == "" || o.Kind() == "":
		return fmt.Errorf("an object must have apiVersion and kind")
	case o.Name() == "":
		return fmt.Errorf("a %s must have metadata.name", o.Kind())
	}
	return nil
}

// manifestJSON is an object's bytes for a request.
func manifestJSON(o api.Object) ([]byte, error) {
	b, err := json.Marshal(o)
	if err != nil {
		return nil, fmt.Errorf("encoding %s %s: %w", o.Kind(), o.Name(), err)
	}
	return b, nil
}
