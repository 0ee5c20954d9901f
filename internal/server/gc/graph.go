package gc

import (
	"cmp"
	"container/list"
	"log/slog"
	"slices"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/workqueue"
)

// identity is an object's coordinates, or an owner reference's with the
// namespace it is looked up in (kube's objectReference).
type identity struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// ownerRef is one of metadata.ownerReferences.
type ownerRef = api.OwnerReference

func blocks(r ownerRef) bool { return r.BlockOwnerDeletion != nil && *r.BlockOwnerDeletion }

// matches reports whether r names id's uid, name, kind and apiVersion.
func matches(r ownerRef, id identity) bool {
	return r.UID == id.UID && r.Name == id.Name && r.Kind == id.Kind && r.APIVersion == id.APIVersion
}

// node is an object in the graph. Every field is guarded by graph.mu.
type node struct {
	id identity
	// owners are the object's ownerReferences as last observed.
	owners []ownerRef
	// dependents are the nodes whose owners name this one's uid (nil
	// until one does: most objects own nothing).
	dependents map[*node]struct{}
	// beingDeleted: observed with a deletionTimestamp (one way).
	beingDeleted bool
	// deletingDependents: observed being deleted with the
	// foregroundDeletion finalizer (one way).
	deletingDependents bool
	// virtual: made for an owner reference, never observed by a monitor.
	virtual bool
	// waitsOrphan, waitsForeground: as last observed, being deleted with
	// the orphan (foregroundDeletion) finalizer, so that only the start of
	// either queues work, as kube compares an update's old object.
	waitsOrphan, waitsForeground bool
}

// nodeState is what a worker reads of a node.
type nodeState struct {
	id                                  identity
	virtual, beingDeleted, deletingDeps bool
}

// graph is the dependency graph; only apply writes it.
type graph struct {
	mu    sync.RWMutex
	nodes map[string]*node // by uid; guarded by mu

	absent             *absentOwners
	toDelete, toOrphan *workqueue.Queue[*node]
	log                *slog.Logger
}

// eventType is what a graph change says.
type eventType uint8

const (
	upsert        eventType = iota // an object listed, added or modified
	deleted                        // an object deleted
	virtualDelete                  // a worker found the object absent
	relisted                       // a monitor listed its resource again
	barrier                        // closes applied: every change before it is applied
)

// event is a graph change (kube's event, with the object's metadata).
type event struct {
	typ eventType
	id  identity // relisted: only APIVersion and Kind
	// upsert:
	owners                           []ownerRef
	beingDeleted, orphan, foreground bool
	// relisted: the uids of the objects listed.
	listed map[string]struct{}
	// barrier:
	applied chan struct{}
}

// state returns what a worker needs of n, and whether n is the graph's
// node for its uid.
func (g *graph) state(n *node) (nodeState, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	return nodeState{id: n.id, virtual: n.virtual, beingDeleted: n.beingDeleted, deletingDeps: n.deletingDependents}, g.nodes[n.id.UID] == n
}

// dependents returns n's dependents now.
func (g *graph) dependents(n *node) []*node {
	g.mu.RLock()
	defer g.mu.RUnlock()
	deps := make([]*node, 0, len(n.dependents))
	for d := range n.dependents {
		deps = append(deps, d)
	}
	return deps
}

// blockingDependents returns the dependents of n whose reference to it has
// blockOwnerDeletion, and whether each is deleting its own dependents.
func (g *graph) blockingDependents(n *node) (deps []*node, deleting []bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for d := range n.dependents {
		if slices.ContainsFunc(d.owners, func(r ownerRef) bool { return r.UID == n.id.UID && blocks(r) }) {
			deps = append(deps, d)
			deleting = append(deleting, d.deletingDependents)
		}
	}
	return deps, deleting
}

// anyDependentDeletingDependents reports whether n has dependents, and
// whether one of them is waiting for its own (a possible cycle).
func (g *graph) anyDependentDeletingDependents(n *node) (has, deleting bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	for d := range n.dependents {
		if d.deletingDependents {
			return true, true
		}
	}
	return len(n.dependents) > 0, false
}

// apply applies one change to the graph and queues the work it makes, as
// kube's processGraphChanges.
func (g *graph) apply(e *event) {
	if e.typ == barrier {
		close(e.applied)
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if e.typ == relisted {
		for _, n := range g.nodes {
			if _, ok := e.listed[n.id.UID]; !ok && !n.virtual && n.id.APIVersion == e.id.APIVersion && n.id.Kind == e.id.Kind {
				g.deleteNode(&event{typ: deleted, id: n.id}, n)
			}
		}
		return
	}
	existing, found := g.nodes[e.id.UID]
	if found && e.typ == upsert && existing.virtual {
		// Observed at last. Dependents that named it otherwise may be wrong.
		if existing.id != e.id {
			_, invalid := partitionDependents(existing.dependents, e.id)
			for _, dep := range invalid {
				if e.id.Namespace != "" && dep.id.Namespace != e.id.Namespace {
					g.reportInvalidNamespace(dep, e.id)
				}
				g.toDelete.Add(dep)
			}
			existing.id = e.id
		}
		existing.virtual = false
	}
	switch {
	case e.typ == upsert && !found:
		n := &node{id: e.id, owners: e.owners, beingDeleted: e.beingDeleted, deletingDependents: e.foreground}
		g.nodes[n.id.UID] = n
		g.addDependentToOwners(n, n.owners)
		g.transitions(n, e)
	case e.typ == upsert:
		added, removed, unblocked := referencesDiffs(existing.owners, e.owners)
		for _, uid := range unblocked { // owners that may now finish a foreground deletion
			if o, ok := g.nodes[uid]; ok {
				g.toDelete.Add(o)
			}
		}
		existing.owners = e.owners
		g.addDependentToOwners(existing, added)
		g.removeDependentFromOwners(existing, removed)
		if e.beingDeleted {
			existing.beingDeleted = true
		}
		g.transitions(existing, e)
	case found:
		g.deleteNode(e, existing)
	}
}

// transitions queues an owner whose deletion just started waiting for the
// collector: orphaning first, as kube.
func (g *graph) transitions(n *node, e *event) {
	startsOrphan, startsForeground := e.orphan && !n.waitsOrphan, e.foreground && !n.waitsForeground
	n.waitsOrphan, n.waitsForeground = e.orphan, e.foreground
	switch {
	case startsOrphan:
		g.toOrphan.Add(n)
	case startsForeground:
		n.deletingDependents = true // a virtual node's was not set
		for dep := range n.dependents {
			g.toDelete.Add(dep)
		}
		g.toDelete.Add(n)
	}
}

// deleteNode applies a delete (or a virtual delete: a worker found the
// object absent) of existing.
func (g *graph) deleteNode(e *event, existing *node) {
	if e.typ == virtualDelete {
		deleted := e.id
		matching, nonmatching := partitionDependents(existing.dependents, deleted)
		switch {
		case existing.virtual && len(nonmatching) > 0:
			// Dependents disagree on the owner's coordinates: those that
			// named the absent ones are collected, the node stays for the
			// others, under one of their names.
			g.collectMatching(deleted, matching)
			if existing.id == deleted {
				if alt, ok := alternateIdentity(nonmatching, deleted); ok {
					existing.id = alt
					g.toDelete.AddRateLimited(existing)
				}
			}
			return
		case !existing.virtual && existing.id != deleted:
			g.collectMatching(deleted, matching) // a real node stays
			return
		}
	}
	delete(g.nodes, existing.id.UID)
	g.removeDependentFromOwners(existing, existing.owners)
	if len(existing.dependents) > 0 {
		g.absent.add(e.id)
	}
	for dep := range existing.dependents {
		g.toDelete.Add(dep)
	}
	for _, o := range existing.owners {
		if on, ok := g.nodes[o.UID]; ok && on.deletingDependents {
			g.toDelete.Add(on) // it may have no blocking dependent left
		}
	}
}

func (g *graph) collectMatching(absent identity, matching []*node) {
	if len(matching) == 0 {
		return
	}
	g.absent.add(absent)
	for _, dep := range matching {
		g.toDelete.Add(dep)
	}
}

// addDependentToOwners records n as a dependent of owners, making a
// virtual node (queued, for a worker to look it up) for an owner not seen
// yet, and queues n if a reference of it may be wrong.
func (g *graph) addDependentToOwners(n *node, owners []ownerRef) {
	suspect := false
	for _, o := range owners {
		on, ok := g.nodes[o.UID]
		if !ok {
			on = &node{
				id:      identity{APIVersion: o.APIVersion, Kind: o.Kind, Namespace: n.id.Namespace, Name: o.Name, UID: o.UID},
				virtual: true,
			}
			g.nodes[o.UID] = on
		}
		if on.dependents == nil {
			on.dependents = map[*node]struct{}{}
		}
		on.dependents[n] = struct{}{}
		switch {
		case !ok:
			g.toDelete.Add(on)
		case on.deletingDependents:
			// A dependent written while its owner waits in the foreground:
			// the owner's processing queues it (or finishes).
			g.toDelete.Add(on)
		}
		if !ok || suspect {
			continue
		}
		ownerNamespaced := on.id.Namespace != ""
		switch {
		case ownerNamespaced && on.id.Namespace != n.id.Namespace:
			if !on.virtual {
				g.reportInvalidNamespace(n, on.id)
			}
			suspect = true
		case !matches(o, on.id):
			suspect = true
		case !ownerNamespaced && on.id.Namespace != n.id.Namespace && on.virtual:
			suspect = true
		}
	}
	if suspect {
		g.toDelete.Add(n)
	}
}

// reportInvalidNamespace logs what kube records as an
// OwnerRefInvalidNamespace event.
func (g *graph) reportInvalidNamespace(n *node, owner identity) {
	g.log.Warn("garbage collector: OwnerRefInvalidNamespace: ownerRef does not exist in namespace", "object", n.id, "owner", owner, "namespace", n.id.Namespace)
}

// removeDependentFromOwners forgets n as a dependent of owners. A virtual
// owner left without dependents leaves the graph: it was there only to be
// looked up for them, and one whose kind is not served, or is served but
// not followed (events.k8s.io Events), would stay for ever, retried, a
// leak any client could grow by rewriting an object's references.
func (g *graph) removeDependentFromOwners(n *node, owners []ownerRef) {
	for _, o := range owners {
		if on, ok := g.nodes[o.UID]; ok {
			delete(on.dependents, n)
			if on.virtual && len(on.dependents) == 0 {
				delete(g.nodes, o.UID)
			}
		}
	}
}

// referencesDiffs returns the references of cur not in old, those of old
// not in cur (by uid), and the uids whose blocking reference was removed
// or stopped blocking. It indexes by uid, as kube's: an object may hold
// 20,000 references, which compared pairwise held the graph builder for
// seconds on each update.
func referencesDiffs(old, cur []ownerRef) (added, removed []ownerRef, unblocked []string) {
	if len(old) == 0 && len(cur) == 0 {
		return nil, nil, nil // most objects: no maps
	}
	inOld := make(map[string]ownerRef, len(old))
	for _, o := range slices.Backward(old) {
		inOld[o.UID] = o // the first of a uid
	}
	inCur := make(map[string]bool, len(cur))
	for _, r := range cur {
		inCur[r.UID] = true
		o, ok := inOld[r.UID]
		switch {
		case !ok:
			added = append(added, r)
		case blocks(o) && !blocks(r):
			unblocked = append(unblocked, r.UID)
		}
	}
	for _, o := range old {
		if !inCur[o.UID] {
			removed = append(removed, o)
			if blocks(o) {
				unblocked = append(unblocked, o.UID)
			}
		}
	}
	return added, removed, unblocked
}

// partitionDependents splits deps into those with a reference matching
// owner's coordinates and those with a reference to its uid that does not
// (a dependent may be in both), as kube's.
func partitionDependents(deps map[*node]struct{}, owner identity) (matching, nonmatching []*node) {
	for dep := range deps {
		match, mismatch := false, false
		if owner.Namespace != "" && owner.Namespace != dep.id.Namespace {
			mismatch = true
		} else {
			for _, r := range dep.owners {
				if r.UID == owner.UID {
					if matches(r, owner) {
						match = true
					} else {
						mismatch = true
					}
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			nonmatching = append(nonmatching, dep)
		}
	}
	return matching, nonmatching
}

// alternateIdentity returns another identity deps give absent's uid: the
// first, in kube's order, that follows absent, else the first.
func alternateIdentity(deps []*node, absent identity) (identity, bool) {
	var alts []identity
	for _, dep := range deps {
		for _, r := range dep.owners {
			if r.UID != absent.UID || matches(r, absent) && (absent.Namespace == "" || absent.Namespace == dep.id.Namespace) {
				continue
			}
			alt := identity{APIVersion: r.APIVersion, Kind: r.Kind, Namespace: dep.id.Namespace, Name: r.Name, UID: r.UID}
			if absent.Namespace == "" && alt.APIVersion == absent.APIVersion && alt.Kind == absent.Kind {
				alt.Namespace = "" // known to be cluster-scoped
			}
			if alt != absent {
				alts = append(alts, alt)
			}
		}
	}
	if len(alts) == 0 {
		return identity{}, false
	}
	slices.SortFunc(alts, compareIdentity)
	if i := slices.IndexFunc(alts, func(a identity) bool { return compareIdentity(absent, a) < 0 }); i >= 0 {
		return alts[i], true
	}
	return alts[0], true
}

// compareIdentity orders by kind, apiVersion, namespace, name, uid (kube's
// referenceLessThan).
func compareIdentity(a, b identity) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.APIVersion, b.APIVersion),
		cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name), cmp.Compare(a.UID, b.UID))
}

// absentOwnersSize is kube's absentOwnerCache size.
const absentOwnersSize = 500

// absentOwners remembers the last owners found absent (kube's
// absentOwnerCache, an LRU), so that the dependents of one deleted owner
// do not each look it up. Its lock is a leaf.
type absentOwners struct {
	mu    sync.Mutex
	max   int
	order *list.List // of identity, most recent first
	byID  map[identity]*list.Element
}

func newAbsentOwners(max int) *absentOwners {
	return &absentOwners{max: max, order: list.New(), byID: map[identity]*list.Element{}}
}

func (a *absentOwners) add(id identity) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if e, ok := a.byID[id]; ok {
		a.order.MoveToFront(e)
		return
	}
	a.byID[id] = a.order.PushFront(id)
	if a.order.Len() > a.max {
		delete(a.byID, a.order.Remove(a.order.Back()).(identity))
	}
}

func (a *absentOwners) has(id identity) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	e, ok := a.byID[id]
	if ok {
		a.order.MoveToFront(e)
	}
	return ok
}
