package cache

import (
	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/selector"
)

// Lister reads an Indexer the way controllers do: by name, by label
// selector, all namespaces or one. Like the Indexer it reads, it returns the
// cached objects themselves: do not modify them.
type Lister[T client.Object] struct{ indexer *Indexer[T] }

// NewLister returns a Lister over indexer.
func NewLister[T client.Object](indexer *Indexer[T]) Lister[T] { return Lister[T]{indexer: indexer} }

// List returns the objects, in every namespace, whose labels sel matches.
func (l Lister[T]) List(sel selector.Labels) []T {
	return filterLabels(l.indexer.List(), sel)
}

// Get returns the cluster-scoped object name, or with a namespace use
// Namespace(ns).Get(name).
func (l Lister[T]) Get(name string) (T, bool) { return l.indexer.GetByKey(name) }

// Namespace returns a Lister of one namespace.
func (l Lister[T]) Namespace(namespace string) NamespaceLister[T] {
	return NamespaceLister[T]{indexer: l.indexer, namespace: namespace}
}

// NamespaceLister reads one namespace of an Indexer through its namespace index.
type NamespaceLister[T client.Object] struct {
	indexer   *Indexer[T]
	namespace string
}

// List returns the namespace's objects whose labels sel matches.
func (l NamespaceLister[T]) List(sel selector.Labels) []T {
	objs, _ := l.indexer.ByIndex(NamespaceIndex, l.namespace) // every Indexer has it
	return filterLabels(objs, sel)
}

// Get returns the object name of the namespace.
func (l NamespaceLister[T]) Get(name string) (T, bool) {
	return l.indexer.GetByKey(l.namespace + "/" + name)
}

func filterLabels[T client.Object](objs []T, sel selector.Labels) []T {
	if sel.Empty() {
		return objs
	}
	out := objs[:0]
	for _, obj := range objs {
		if sel.Matches(obj.GetLabels()) {
			out = append(out, obj)
		}
	}
	return out
}
