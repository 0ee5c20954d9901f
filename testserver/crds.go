package testserver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/wait"
)

var definitions = client.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// crdPollInterval is how often installCRDs reads discovery while the
// definitions are not all served (they are by the time their creation
// is answered, so the first read normally suffices).
const crdPollInterval = 10 * time.Millisecond

// definition is a CustomResourceDefinition read from a file.
type definition struct {
	file string
	obj  api.Object
}

// installCRDs creates (or, on a store that has them, updates) the
// definitions of opts.CRDDirectoryPaths and waits until discovery serves
// every version of each, as envtest's InstallCRDs does.
func (s *Server) installCRDs(ctx context.Context, opts Options) error {
	defs, err := readCRDs(opts.CRDDirectoryPaths, opts.ErrorIfCRDPathMissing)
	if err != nil || len(defs) == 0 {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cmp.Or(opts.CRDInstallTimeout, defaultCRDInstallTimeout))
	defer cancel()
	c, err := client.New(s.ClientConfig())
	if err != nil {
		return err
	}
	defer c.Close()
	crds := client.NewResource[client.Unstructured](c, definitions, "")
	for _, d := range defs {
		created, err := createOrUpdate(ctx, crds, client.Unstructured(d.obj))
		if err != nil {
			return fmt.Errorf("installing CustomResourceDefinition %s of %s: %w", d.obj.Name(), d.file, err)
		}
		s.CRDs = append(s.CRDs, created.Object())
	}
	return waitServed(ctx, c, s.CRDs)
}

// createOrUpdate creates obj, or replaces the definition of its name.
func createOrUpdate(ctx context.Context, crds *client.Resource[client.Unstructured], obj client.Unstructured) (client.Unstructured, error) {
	created, err := crds.Create(ctx, obj, client.WriteOptions{})
	if !client.IsAlreadyExists(err) {
		return created, err
	}
	cur, err := crds.Get(ctx, obj.GetName())
	if err != nil {
		return nil, err
	}
	obj.Object().Metadata()["resourceVersion"] = cur.GetResourceVersion()
	return crds.Update(ctx, obj, client.WriteOptions{})
}

// waitServed reads discovery until it lists every served version of each
// definition.
func waitServed(ctx context.Context, c *client.Client, crds []api.Object) error {
	for {
		served, err := c.Discover(ctx)
		missing := unserved(crds, served)
		if err == nil && len(missing) == 0 {
			return nil
		}
		if werr := wait.Sleep(ctx, crdPollInterval); werr != nil {
			return fmt.Errorf("waiting for CustomResourceDefinitions to be served (missing %v): %w", missing, errors.Join(werr, err))
		}
	}
}

// unserved lists the group/version/resource of every served version of
// crds that served lacks.
func unserved(crds []api.Object, served client.APIResources) []string {
	var missing []string
	for _, crd := range crds {
		spec, _ := crd["spec"].(map[string]any)
		group, _ := spec["group"].(string)
		names, _ := spec["names"].(map[string]any)
		plural, _ := names["plural"].(string)
		versions, _ := spec["versions"].([]any)
		for _, v := range versions {
			v, _ := v.(map[string]any)
			name, _ := v["name"].(string)
			if v["served"] != true {
				continue
			}
			want := client.GroupVersionResource{Group: group, Version: name, Resource: plural}
			if !slices.ContainsFunc(served, func(r client.APIResource) bool { return r.GroupVersionResource == want }) {
				missing = append(missing, want.String())
			}
		}
	}
	return missing
}

// readCRDs reads the CustomResourceDefinitions of paths: files, and the
// .json, .yaml and .yml files of directories, in name order.
func readCRDs(paths []string, errorIfMissing bool) ([]definition, error) {
	var defs []definition
	for _, p := range paths {
		files, err := crdFiles(p)
		if errors.Is(err, os.ErrNotExist) && !errorIfMissing {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("CRD path: %w", err)
		}
		for _, f := range files {
			d, err := readCRDFile(f)
			if err != nil {
				return nil, err
			}
			defs = append(defs, d...)
		}
	}
	return defs, nil
}

// crdFiles lists the files a path of CRDDirectoryPaths stands for.
func crdFiles(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, err
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return nil, err
	}
	var files []string
	for _, e := range entries {
		if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".json" || ext == ".yaml" || ext == ".yml") {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	return files, nil // os.ReadDir sorts by name
}

// readCRDFile reads the CustomResourceDefinitions of one file of YAML
// documents (JSON being YAML), skipping empty documents and other kinds.
func readCRDFile(name string) ([]definition, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	var defs []definition
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for i := 1; ; i++ {
		obj, err := decodeDocument(dec)
		if err == io.EOF {
			return defs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s, document %d: %w", name, i, err)
		}
		switch {
		case obj == nil || obj.Kind() != "CustomResourceDefinition":
		case obj.APIVersion() != definitions.GroupVersion():
			return nil, fmt.Errorf("%s, document %d: CustomResourceDefinition %s is %s; only %s is served", name, i, obj.Name(), obj.APIVersion(), definitions.GroupVersion())
		default:
			defs = append(defs, definition{file: name, obj: obj})
		}
	}
}

// decodeDocument reads dec's next document as an object; nil for an
// empty document.
func decodeDocument(dec *yaml.Decoder) (api.Object, error) {
	var node yaml.Node
	if err := dec.Decode(&node); err != nil {
		return nil, err
	}
	if len(node.Content) == 0 || node.Content[0].Tag == "!!null" {
		return nil, nil
	}
	// sigs.k8s.io/yaml turns YAML into JSON as Kubernetes does (its
	// numbers, its keys), from the document's own text.
	text, err := yaml.Marshal(&node)
	if err != nil {
		return nil, err
	}
	j, err := sigsyaml.YAMLToJSON(text)
	if err != nil {
		return nil, err
	}
	return api.ParseObject(j)
}
