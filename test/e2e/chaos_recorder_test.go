package e2e

import (
	"fmt"
	"maps"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/client/cache"
)

// state is what the checks compare of an object: its resourceVersion and
// content.
type state struct {
	RV   string
	Data map[string]string
}

// states maps "namespace/name" to state.
type states map[string]state

func statesOf(objs []*configMap) states {
	out := states{}
	for _, o := range objs {
		out[cache.MetaNamespaceKeyFunc(o)] = state{RV: o.ResourceVersion, Data: o.Data}
	}
	return out
}

// recorder is an informer's event handler that checks, as notifications
// arrive, that each key's sequence is one a watcher of the key could see:
// an add only of an absent object, an update or a delete only of a present
// one, resourceVersions never going back; and it keeps each key's last
// state.
type recorder struct {
	mu       sync.Mutex
	last     states           // present objects; guarded by mu
	lastRV   map[string]int64 // every key's last resourceVersion; guarded by mu
	unknowns []string         // keys deleted with finalStateUnknown; guarded by mu
	bad      []string         // broken sequences; guarded by mu
}

func newRecorder() *recorder {
	return &recorder{last: states{}, lastRV: map[string]int64{}}
}

func (r *recorder) handler() cache.ResourceEventHandler[*configMap] {
	return cache.HandlerFuncs[*configMap]{
		AddFunc:    func(o *configMap, _ bool) { r.note("add", o, false) },
		UpdateFunc: func(_, o *configMap) { r.note("update", o, false) },
		DeleteFunc: func(o *configMap, unknown bool) { r.note("delete", o, unknown) },
	}
}

func (r *recorder) note(op string, o *configMap, unknown bool) {
	key := cache.MetaNamespaceKeyFunc(o)
	rv, err := strconv.ParseInt(o.ResourceVersion, 10, 64)
	r.mu.Lock()
	defer r.mu.Unlock()
	_, present := r.last[key]
	prev := r.lastRV[key]
	switch {
	case err != nil:
		r.bad = append(r.bad, fmt.Sprintf("%s %s: resourceVersion %q", op, key, o.ResourceVersion))
	case present == (op == "add"):
		r.bad = append(r.bad, fmt.Sprintf("%s %s@%d: present %v", op, key, rv, present))
	case rv < prev || rv == prev && op != "delete":
		r.bad = append(r.bad, fmt.Sprintf("%s %s@%d after @%d", op, key, rv, prev))
	}
	r.lastRV[key] = max(rv, prev)
	if op == "delete" {
		delete(r.last, key)
		if unknown {
			r.unknowns = append(r.unknowns, key)
		}
		return
	}
	r.last[key] = state{RV: o.ResourceVersion, Data: o.Data}
}

// final returns the objects the handler was last told exist.
func (r *recorder) final() states {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.last)
}

// broken returns the sequences that broke a rule.
func (r *recorder) broken() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.bad...)
}

// deletedUnknown returns the keys deleted with finalStateUnknown, in order.
func (r *recorder) deletedUnknown() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.unknowns...)
}
