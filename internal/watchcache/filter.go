package watchcache

import (
	"unique"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
)

// Filter selects the objects a watcher or a list sees.
type Filter struct {
	Namespace string // "" for every namespace
	Labels    selector.Labels
	Fields    selector.Fields
	// ns is Namespace made unique, once a watcher holds the filter: it
	// tests an object's namespace by comparing two pointers.
	ns unique.Handle[string]
}

// interned returns f with its namespace made unique, for a filter tested
// many times (a watcher's).
func (f Filter) interned() Filter {
	if f.Namespace != "" {
		f.ns = unique.Make(f.Namespace)
	}
	return f
}

func (f Filter) matches(o *Object) bool {
	if f.Namespace != "" && !f.inNamespace(o) {
		return false
	}
	if !f.Labels.Empty() && !f.Labels.Matches(o.labels) {
		return false
	}
	return f.Fields.Empty() || f.Fields.Matches(o.fields)
}

func (f Filter) inNamespace(o *Object) bool {
	if f.ns != (unique.Handle[string]{}) {
		return f.ns == o.ns
	}
	return o.ns.Value() == f.Namespace
}

// Item is one event a watcher delivers.
type Item struct {
	// Type is api.Added, api.Modified, api.Deleted or api.Bookmark; a
	// sender's api.Error item ends a stream (the cache never queues one:
	// Pending returns the error).
	Type string
	Rev  int64
	// Object is the object's JSON (ADDED, MODIFIED, DELETED).
	Object []byte
	// Alt memoises another encoding of Object, shared by every watcher.
	Alt *Encoded
	// Status is the error of an ERROR item, the last of its stream.
	Status *api.Status
	// InitialEventsEnd marks the BOOKMARK that ends the initial events.
	InitialEventsEnd bool
}

// itemFor returns what event e looks like through f, applying kube's
// selector transitions; ok is false if f sees nothing of it.
func (f Filter) itemFor(e *Event) (Item, bool) {
	cur := e.Cur != nil && f.matches(e.Cur)
	prev := e.Prev != nil && f.matches(e.Prev)
	switch {
	case cur && prev:
		return Item{Type: api.Modified, Rev: e.Rev, Object: e.Cur.JSON, Alt: &e.Cur.Alt}, true
	case cur:
		return Item{Type: api.Added, Rev: e.Rev, Object: e.Cur.JSON, Alt: &e.Cur.Alt}, true
	case prev:
		return Item{Type: api.Deleted, Rev: e.Rev, Object: e.DeletedJSON(), Alt: &e.deletedAlt}, true
	}
	return Item{}, false
}
