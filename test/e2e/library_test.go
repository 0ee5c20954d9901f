package e2e

import (
	"context"
	"fmt"
	"testing"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
)

// configMap is a typed ConfigMap as a program writes its own types,
// without k8s.io/api: api.ObjectMeta makes *configMap a client.Object.
type configMap struct {
	api.TypeMeta
	api.ObjectMeta `json:"metadata"`
	Data           map[string]string `json:"data,omitempty"`
}

var configMaps = client.GroupVersionResource{Version: "v1", Resource: "configmaps"}

func newConfigMap(name string, data map[string]string) *configMap {
	return &configMap{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: api.ObjectMeta{Name: name}, Data: data}
}

func TestLibraryTyped(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	cms := client.NewResource[*configMap](c, configMaps, "default")

	w, err := cms.Watch(ctx, client.ListOptions{ResourceVersion: "0", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	a, err := cms.Create(ctx, newConfigMap("a", map[string]string{"k": "1"}), client.WriteOptions{FieldManager: "e2e"})
	if err != nil {
		t.Fatal(err)
	}
	if a.UID == "" || a.ResourceVersion == "" || a.Namespace != "default" {
		t.Errorf("created %+v", a)
	}
	if _, err := cms.Create(ctx, newConfigMap("a", nil), client.WriteOptions{}); !client.IsAlreadyExists(err) {
		t.Errorf("a second create: %v", err)
	}
	stale := *a
	a.Data["k"] = "2"
	if a, err = cms.Update(ctx, a, client.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	stale.Data = map[string]string{"k": "lost"}
	if _, err := cms.Update(ctx, &stale, client.WriteOptions{}); !client.IsConflict(err) {
		t.Errorf("an update from a stale resourceVersion: %v", err)
	}
	patched, err := cms.Patch(ctx, "a", client.MergePatchType, []byte(`{"data":{"p":"x"}}`), client.PatchOptions{})
	if err != nil || patched.Data["p"] != "x" || patched.Data["k"] != "2" {
		t.Fatalf("merge patch: %+v, %v", patched, err)
	}
	err = cms.Delete(ctx, "a", client.DeleteOptions{Preconditions: client.Preconditions{ResourceVersion: a.ResourceVersion}})
	if !client.IsConflict(err) {
		t.Errorf("a delete with a stale precondition: %v", err)
	}
	if err := cms.Delete(ctx, "a", client.DeleteOptions{Preconditions: client.Preconditions{UID: a.UID}}); err != nil {
		t.Fatal(err)
	}
	if _, err := cms.Get(ctx, "a"); !client.IsNotFound(err) {
		t.Errorf("get after delete: %v", err)
	}

	want := []string{"ADDED a 1", "MODIFIED a 2", "MODIFIED a 2", "DELETED a 2"}
	for i, wantEv := range want {
		ev := <-w.Events()
		if ev.Type == client.Bookmark {
			ev = <-w.Events()
		}
		if got := fmt.Sprintf("%s %s %s", ev.Type, ev.Object.GetName(), ev.Object.Data["k"]); got != wantEv {
			t.Errorf("event %d: %s, want %s", i, got, wantEv)
		}
	}
}

func TestLibraryListAllAndDiscovery(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	rs, err := c.Discover(ctx)
	if err != nil {
		t.Fatal(err)
	}
	res, err := rs.Resolve("cm")
	if err != nil || res.GroupVersionResource != configMaps || !res.Namespaced {
		t.Fatalf("Resolve(cm) = %+v, %v", res, err)
	}
	cms := client.NewResource[client.Unstructured](c, res.GroupVersionResource, "kube-public")
	for i := range 7 {
		obj := client.Unstructured{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": fmt.Sprintf("cm-%d", i)}}
		if _, err := cms.Create(ctx, obj, client.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	items, rv, err := cms.ListAll(ctx, client.ListOptions{Limit: 3})
	if err != nil || len(items) != 7 || rv == "" {
		t.Fatalf("ListAll: %d items at %q, %v", len(items), rv, err)
	}
	page, _, next, err := cms.List(ctx, client.ListOptions{Limit: 3})
	if err != nil || len(page) != 3 || next == "" {
		t.Errorf("one page: %d items, continue %q, %v", len(page), next, err)
	}
	table, err := cms.ListTable(ctx, client.ListOptions{})
	if err != nil || len(table.Rows) != 7 || table.ColumnDefinitions[0].Name != "Name" {
		t.Errorf("table: %+v, %v", table, err)
	}
}

// client returns a library client of s, closed when the test ends.
func (s *server) client(t *testing.T) *client.Client {
	t.Helper()
	c, err := client.New(client.ConfigForURL(s.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}
