package cache

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/client/cache/cachetest"
	"github.com/listwatch/listwatch/client/selector"
)

type obj = cachetest.Object

func labelled(ns, name string, rv int, labels map[string]string) *obj {
	o := cachetest.New(ns, name, rv)
	o.Labels = labels
	return o
}

// byApp indexes objects by their "app" label, if any.
func byApp(o *obj) []string {
	if v, ok := o.Labels["app"]; ok {
		return []string{v}
	}
	return nil
}

func keys(objs []*obj) []string {
	out := make([]string, 0, len(objs))
	for _, o := range objs {
		out = append(out, MetaNamespaceKeyFunc(o))
	}
	slices.Sort(out)
	return out
}

func sorted(s []string, err error) []string {
	if err != nil {
		panic(err)
	}
	slices.Sort(s)
	return s
}

func TestKeys(t *testing.T) {
	for _, tc := range []struct {
		obj     *obj
		key     string
		ns, nam string
	}{
		{cachetest.New("ns", "a", 1), "ns/a", "ns", "a"},
		{cachetest.New("", "node1", 1), "node1", "", "node1"},
	} {
		if got := MetaNamespaceKeyFunc(tc.obj); got != tc.key {
			t.Errorf("key = %q, want %q", got, tc.key)
		}
		ns, name, err := SplitMetaNamespaceKey(tc.key)
		if err != nil || ns != tc.ns || name != tc.nam {
			t.Errorf("SplitMetaNamespaceKey(%q) = %q, %q, %v", tc.key, ns, name, err)
		}
	}
	if _, _, err := SplitMetaNamespaceKey("a/b/c"); err == nil {
		t.Error("SplitMetaNamespaceKey(a/b/c) did not fail")
	}
}

func TestIndexerCRUDAndIndices(t *testing.T) {
	x := NewIndexer(Indexers[*obj]{"app": byApp})
	x.Add(labelled("a", "web1", 1, map[string]string{"app": "web"}))
	x.Add(labelled("b", "web2", 2, map[string]string{"app": "web"}))
	x.Add(labelled("a", "db", 3, map[string]string{"app": "db"}))
	x.Add(cachetest.New("", "cluster", 4))

	if got, _ := x.ByIndex("app", "web"); !cmp.Equal(keys(got), []string{"a/web1", "b/web2"}) {
		t.Errorf("ByIndex(app, web) = %v", keys(got))
	}
	if got, _ := x.ByIndex(NamespaceIndex, "a"); !cmp.Equal(keys(got), []string{"a/db", "a/web1"}) {
		t.Errorf("ByIndex(namespace, a) = %v", keys(got))
	}
	if diff := cmp.Diff([]string{"a/web1", "b/web2"}, sorted(x.IndexKeys("app", "web"))); diff != "" {
		t.Errorf("IndexKeys (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db", "web"}, sorted(x.ListIndexFuncValues("app"))); diff != "" {
		t.Errorf("ListIndexFuncValues (-want +got):\n%s", diff)
	}
	if got, _ := x.Index("app", labelled("z", "z", 0, map[string]string{"app": "db"})); !cmp.Equal(keys(got), []string{"a/db"}) {
		t.Errorf("Index = %v", keys(got))
	}

	// An update moves the object between index values; an emptied value
	// disappears.
	x.Update(labelled("a", "db", 5, map[string]string{"app": "cache"}))
	if diff := cmp.Diff([]string{"cache", "web"}, sorted(x.ListIndexFuncValues("app"))); diff != "" {
		t.Errorf("after update (-want +got):\n%s", diff)
	}
	x.Delete(cachetest.New("a", "web1", 0))
	x.DeleteKey("b/web2")
	if diff := cmp.Diff([]string{"cache"}, sorted(x.ListIndexFuncValues("app"))); diff != "" {
		t.Errorf("after delete (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "a"}, sorted(x.ListIndexFuncValues(NamespaceIndex))); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	if got, ok := x.GetByKey("a/db"); !ok || got.ResourceVersion != "5" {
		t.Errorf("GetByKey(a/db) = %v, %v", got, ok)
	}
	if _, ok := x.Get(cachetest.New("a", "web1", 0)); ok {
		t.Error("deleted object still there")
	}
	if x.Len() != 2 || len(x.List()) != 2 || !cmp.Equal(sorted(x.ListKeys(), nil), []string{"a/db", "cluster"}) {
		t.Errorf("Len %d, List %d, ListKeys %v", x.Len(), len(x.List()), x.ListKeys())
	}
}

func TestIndexerUnknownIndex(t *testing.T) {
	x := NewIndexer[*obj](nil)
	if _, err := x.ByIndex("nope", "v"); !errors.Is(err, ErrNoIndex) {
		t.Errorf("ByIndex of a missing index: %v, want ErrNoIndex", err)
	}
	if _, err := x.IndexKeys("nope", "v"); !errors.Is(err, ErrNoIndex) {
		t.Errorf("IndexKeys: %v", err)
	}
	if _, err := x.ListIndexFuncValues("nope"); !errors.Is(err, ErrNoIndex) {
		t.Errorf("ListIndexFuncValues: %v", err)
	}
	if _, err := x.Index("nope", cachetest.New("", "a", 1)); !errors.Is(err, ErrNoIndex) {
		t.Errorf("Index: %v", err)
	}
}

func TestAddIndexersIndexesExisting(t *testing.T) {
	x := NewIndexer[*obj](nil)
	x.Add(labelled("a", "web", 1, map[string]string{"app": "web"}))
	if err := x.AddIndexers(Indexers[*obj]{"app": byApp}); err != nil {
		t.Fatal(err)
	}
	if got, _ := x.ByIndex("app", "web"); len(got) != 1 {
		t.Errorf("ByIndex after AddIndexers = %v", keys(got))
	}
	if err := x.AddIndexers(Indexers[*obj]{NamespaceIndex: byApp}); err == nil {
		t.Error("AddIndexers with a taken name did not fail")
	}
}

func TestListers(t *testing.T) {
	x := NewIndexer[*obj](nil)
	x.Add(labelled("a", "web", 1, map[string]string{"app": "web"}))
	x.Add(labelled("a", "db", 2, map[string]string{"app": "db"}))
	x.Add(labelled("b", "web", 3, map[string]string{"app": "web"}))
	x.Add(labelled("", "node", 4, map[string]string{"app": "web"}))
	l := NewLister(x)
	web, err := selector.ParseLabels("app=web")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"a/web", "b/web", "node"}, keys(l.List(web))); diff != "" {
		t.Errorf("List(app=web) (-want +got):\n%s", diff)
	}
	if got := len(l.List(selector.Labels{})); got != 4 {
		t.Errorf("List(everything) = %d objects, want 4", got)
	}
	if diff := cmp.Diff([]string{"a/web"}, keys(l.Namespace("a").List(web))); diff != "" {
		t.Errorf("Namespace(a).List(app=web) (-want +got):\n%s", diff)
	}
	if got := len(l.Namespace("a").List(selector.Labels{})); got != 2 {
		t.Errorf("Namespace(a).List(everything) = %d, want 2", got)
	}
	if o, ok := l.Namespace("b").Get("web"); !ok || o.ResourceVersion != "3" {
		t.Errorf("Namespace(b).Get(web) = %v, %v", o, ok)
	}
	if _, ok := l.Namespace("b").Get("db"); ok {
		t.Error("Namespace(b).Get(db) found something")
	}
	if o, ok := l.Get("node"); !ok || o.ResourceVersion != "4" {
		t.Errorf("Get(node) = %v, %v", o, ok)
	}
}

func TestIndexerConcurrent(t *testing.T) {
	x := NewIndexer(Indexers[*obj]{"app": byApp})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			x.Update(labelled("ns", "o", i, map[string]string{"app": []string{"a", "b"}[i%2]}))
		}
	}()
	for range 1000 {
		_, _ = x.ByIndex("app", "a")
		_ = x.List()
	}
	<-done
	if got := sorted(x.ListIndexFuncValues("app")); len(got) != 1 {
		t.Errorf("index values after concurrent updates: %v, want one", got)
	}
}

// TestIndexerCallersNamespaceIndex checks that an index named
// NamespaceIndex given to NewIndexer, as client-go callers give
// MetaNamespaceIndexFunc, is the namespace index: the one queries and the
// NamespaceLister read, maintained alone, without the built-in one updated
// beside it for nothing.
func TestIndexerCallersNamespaceIndex(t *testing.T) {
	calls := 0
	byNamespace := func(o *obj) []string { calls++; return []string{o.GetNamespace()} }
	x := NewIndexer(Indexers[*obj]{NamespaceIndex: byNamespace, "app": byApp})
	x.Add(labelled("a", "web", 1, map[string]string{"app": "web"}))
	x.Add(labelled("b", "web", 2, map[string]string{"app": "web"}))
	x.Update(labelled("a", "web", 3, map[string]string{"app": "db"}))
	x.DeleteKey("b/web")
	if calls != 5 { // one per added object, two for the update, one for the delete
		t.Errorf("the caller's namespace index was called %d times, want 5", calls)
	}
	if x.byNamespace != nil {
		t.Errorf("the built-in namespace index is kept beside the caller's: %v", x.byNamespace)
	}
	if diff := cmp.Diff([]string{"a"}, sorted(x.ListIndexFuncValues(NamespaceIndex))); diff != "" {
		t.Errorf("namespaces (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"a/web"}, keys(NewLister(x).Namespace("a").List(selector.Labels{}))); diff != "" {
		t.Errorf("Namespace(a).List (-want +got):\n%s", diff)
	}
}
