package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const manifests = `apiVersion: v1
kind: ConfigMap
metadata:
  name: web
  labels: {app: web}
data: {color: blue}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: db, namespace: kube-system, labels: {app: db}}
data: {size: "3"}
`

func TestCLI(t *testing.T) {
	s := startServer(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "app.yaml")
	if err := os.WriteFile(file, []byte(manifests), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "extra.json"), []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"extra"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	contains := func(t *testing.T, out string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Errorf("output lacks %q:\n%s", w, out)
			}
		}
	}

	t.Run("apply a directory", func(t *testing.T) {
		out := s.run(t, "apply", "-f", dir)
		want := "configmap/web serverside-applied\nconfigmap/db serverside-applied\nconfigmap/extra serverside-applied\n"
		if out != want {
			t.Errorf("apply printed %q, want %q", out, want)
		}
		s.run(t, "apply", "-f", file) // again: nothing changes, no error
	})
	t.Run("apply goes on after a failure", func(t *testing.T) {
		bad := t.TempDir()
		docs := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: first}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Not_A_Name}\n---\n" +
			"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: last}\n"
		if err := os.WriteFile(filepath.Join(bad, "three.yaml"), []byte(docs), 0o600); err != nil {
			t.Fatal(err)
		}
		out, errOut, err := s.try(t, "apply", "-f", bad)
		if err == nil {
			t.Fatal("apply with an invalid object succeeded")
		}
		if out != "configmap/first serverside-applied\nconfigmap/last serverside-applied\n" {
			t.Errorf("apply printed %q, want the two valid objects applied", out)
		}
		contains(t, errOut, `error when serverside-apply "`+filepath.Join(bad, "three.yaml")+`"`, "Not_A_Name")
		s.run(t, "delete", "cm", "first", "last")
	})
	t.Run("get as a table", func(t *testing.T) {
		out := s.run(t, "get", "configmaps")
		contains(t, out, "NAME", "DATA", "web ", "extra")
		if strings.Contains(out, "db") {
			t.Errorf("another namespace's object listed:\n%s", out)
		}
		contains(t, s.run(t, "get", "cm", "-A"), "NAMESPACE", "kube-system   db")
		contains(t, s.run(t, "get", "ConfigMap", "-n", "kube-system", "-o", "wide"), "db")
	})
	t.Run("get as names with a selector", func(t *testing.T) {
		if out := s.run(t, "get", "configmap", "-A", "-l", "app in (web,db)", "-o", "name"); out != "configmap/db\nconfigmap/web\n" && out != "configmap/web\nconfigmap/db\n" {
			t.Errorf("got %q", out)
		}
	})
	t.Run("get one as JSON and YAML", func(t *testing.T) {
		var obj map[string]any
		if err := json.Unmarshal([]byte(s.run(t, "get", "cm", "web", "-o", "json")), &obj); err != nil {
			t.Fatal(err)
		}
		if obj["data"].(map[string]any)["color"] != "blue" {
			t.Errorf("got %v", obj)
		}
		out := s.run(t, "get", "cm", "web", "-o", "yaml")
		contains(t, out, "color: blue")
		if strings.Contains(out, "managedFields") {
			t.Errorf("managedFields printed without --show-managed-fields:\n%s", out)
		}
		contains(t, s.run(t, "get", "cm", "web", "-o", "yaml", "--show-managed-fields"), "manager: listwatch")
	})
	t.Run("get a list as JSON", func(t *testing.T) {
		var list struct {
			Kind  string           `json:"kind"`
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal([]byte(s.run(t, "get", "cm", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		if list.Kind != "List" || len(list.Items) != 2 {
			t.Errorf("got a %s of %d", list.Kind, len(list.Items))
		}
		for _, it := range list.Items {
			if it["apiVersion"] != "v1" || it["kind"] != "ConfigMap" {
				t.Errorf("item without its type: apiVersion %v, kind %v", it["apiVersion"], it["kind"])
			}
		}
	})
	t.Run("get several types", func(t *testing.T) {
		out := s.run(t, "get", "cm,namespaces")
		// Two tables, a blank line between them, names with their kinds.
		contains(t, out, "NAME", "DATA", "configmap/web ", "\n\nNAME", "STATUS", "namespace/default ")
		contains(t, s.run(t, "get", "cm,ns", "-o", "name"), "configmap/web\n", "namespace/default\n")
		var list struct {
			Items []map[string]any `json:"items"`
		}
		if err := json.Unmarshal([]byte(s.run(t, "get", "cm,ns", "-o", "json")), &list); err != nil {
			t.Fatal(err)
		}
		kinds := map[any]int{}
		for _, it := range list.Items {
			kinds[it["kind"]]++
		}
		if kinds["ConfigMap"] != 2 || kinds["Namespace"] < 2 {
			t.Errorf("one list of both types: got kinds %v", kinds)
		}
		if _, errOut, err := s.try(t, "get", "cm,ns", "-w"); err == nil || !strings.Contains(errOut, "you may only specify a single resource type") {
			t.Errorf("watch of two types: err %v, stderr %q", err, errOut)
		}
	})
	t.Run("watch prints only what changed", func(t *testing.T) {
		w := follow(t, s.URL, "watch", "cm", "-o", "json")
		for range 2 {
			if ev := w.event(t); ev.Type != "ADDED" {
				t.Fatalf("got %+v, want the list's objects as ADDED", ev)
			}
		}
		patch := filepath.Join(t.TempDir(), "web.yaml")
		if err := os.WriteFile(patch, []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web, labels: {app: web}}\ndata: {color: green}\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		s.run(t, "apply", "-f", patch)
		ev := w.event(t)
		if ev.Type != "MODIFIED" || ev.Key != "default/web" || len(ev.Changes) != 1 || ev.Changes[0].Path != "data.color" {
			t.Errorf("got %+v, want one change, data.color", ev)
		}
	})
	t.Run("errors", func(t *testing.T) {
		for _, args := range [][]string{{"get", "cm", "missing"}, {"get", "nothings"}, {"get", "cm", "-o", "xml"}, {"delete", "cm"}} {
			_, errOut, err := s.try(t, args...)
			if err == nil || !strings.Contains(errOut, "error:") {
				t.Errorf("listwatch %v: err %v, stderr %q", args, err, errOut)
			}
		}
		if _, errOut, _ := s.try(t, "get", "cm", "missing"); !strings.Contains(errOut, `configmaps "missing" not found`) {
			t.Errorf("stderr %q", errOut)
		}
	})
	t.Run("api-resources", func(t *testing.T) {
		contains(t, s.run(t, "api-resources"), "configmaps", "cm", "v1", "ConfigMap", "customresourcedefinitions")
	})
	t.Run("get --watch", func(t *testing.T) {
		w := follow(t, s.URL, "get", "cm", "-w", "-o", "name", "--output-watch-events")
		w.expectLines(t, "^ADDED configmap/(extra|web)$", "^ADDED configmap/(extra|web)$")
		s.run(t, "delete", "cm", "extra")
		w.expectLines(t, "^DELETED configmap/extra$")
	})
	t.Run("delete", func(t *testing.T) {
		if out := s.run(t, "delete", "-f", file); out != "configmap \"web\" deleted\nconfigmap \"db\" deleted\n" {
			t.Errorf("delete printed %q", out)
		}
		s.run(t, "delete", "cm", "web", "--ignore-not-found")
		if _, errOut, _ := s.try(t, "get", "cm"); !strings.Contains(errOut, "No resources found in default namespace.") {
			t.Errorf("stderr %q", errOut)
		}
	})
}

// watchEvent is a line of `listwatch watch -o json`.
type watchEvent struct {
	Type            string `json:"type"`
	ResourceVersion string `json:"resourceVersion"`
	Key             string `json:"key"`
	Changes         []struct {
		Path string `json:"path"`
		Old  any    `json:"old"`
		New  any    `json:"new"`
	} `json:"changes"`
}

func (st *stream) event(t *testing.T) watchEvent {
	t.Helper()
	var ev watchEvent
	l := st.next(t)
	if err := json.Unmarshal([]byte(l), &ev); err != nil {
		t.Fatalf("line %q: %v", l, err)
	}
	return ev
}

// TestWatchResumesAcrossRestart restarts the server under `listwatch
// watch`: the events written after the restart, some before the watch is
// back, come exactly once and in order.
func TestWatchResumesAcrossRestart(t *testing.T) {
	s := startServer(t)
	apply := func(name, value string) {
		t.Helper()
		f := filepath.Join(t.TempDir(), "cm.yaml")
		doc := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + "}\ndata: {v: \"" + value + "\"}\n"
		if err := os.WriteFile(f, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		s.run(t, "apply", "-f", f)
	}
	apply("a", "1")
	w := follow(t, s.URL, "watch", "configmaps", "-o", "json")
	var got []watchEvent
	expect := func(typ, key string) watchEvent {
		t.Helper()
		ev := w.event(t)
		if ev.Type != typ || ev.Key != key {
			t.Fatalf("got %+v, want %s %s (after %+v)", ev, typ, key, got)
		}
		got = append(got, ev)
		return ev
	}
	expect("ADDED", "default/a")
	apply("a", "2")
	if ev := expect("MODIFIED", "default/a"); len(ev.Changes) == 0 || ev.Changes[0].Path != "data.v" || ev.Changes[0].New != "2" {
		t.Errorf("changes of the update: %+v", ev.Changes)
	}

	s.stop(t)
	s.start(t)
	apply("a", "3")
	apply("b", "1")
	s.run(t, "delete", "cm", "a")
	expect("MODIFIED", "default/a")
	expect("ADDED", "default/b")
	expect("DELETED", "default/a")
	apply("b", "2")
	expect("MODIFIED", "default/b")

	for i := 1; i < len(got); i++ {
		if !rvLess(got[i-1].ResourceVersion, got[i].ResourceVersion) {
			t.Errorf("resourceVersions out of order or repeated: %+v", got)
		}
	}
	select {
	case l := <-w.lines:
		t.Errorf("an extra event: %s", l)
	default:
	}
}

// rvLess compares resourceVersions, which listwatch makes decimal
// revisions (clients elsewhere must treat them as opaque).
func rvLess(a, b string) bool { return len(a) < len(b) || len(a) == len(b) && a < b }
