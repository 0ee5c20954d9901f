package gc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// hold is a finalizer that keeps an object, deletion requested, until the
// test removes it.
const hold = "example.com/hold"

func ownerUIDs(o api.Object) []string {
	var uids []string
	refs, _ := o.Metadata()["ownerReferences"].([]any)
	for _, r := range refs {
		uids = append(uids, r.(map[string]any)["uid"].(string))
	}
	return uids
}

func TestBackground(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", nil)
	other := e.create(cms, "default", "other", nil)
	for i := range 3 {
		e.create(cms, "default", fmt.Sprint("dep-", i), owned(ref(owner, false)))
	}
	both := e.create(cms, "default", "both", owned(ref(owner, true), ref(other, false)))
	e.delete(cms, "default", "owner")
	for i := range 3 {
		e.waitGone(cms, "default", fmt.Sprint("dep-", i))
	}
	// An owner stands: only the reference to the absent one goes.
	e.waitFor(cms, "default", "both", "its reference to the deleted owner removed", func(o api.Object) bool {
		return o != nil && len(ownerUIDs(o)) == 1 && ownerUIDs(o)[0] == other.UID()
	})
	if got := e.get(cms, "default", "both"); got == nil || got.UID() != both.UID() {
		t.Fatalf("the dependent with a standing owner: %v", got)
	}
}

func TestBackgroundHonoursDependentsFinalizers(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", nil)
	// A dependent that orphans its own dependents when collected.
	mid := e.create(cms, "default", "mid", &object{owners: []ownerRef{ref(owner, false)}, finalizers: []string{registry.OrphanFinalizer}})
	e.create(cms, "default", "leaf", owned(ref(mid, false)))
	e.delete(cms, "default", "owner")
	e.waitGone(cms, "default", "mid")
	e.waitFor(cms, "default", "leaf", "orphaned", func(o api.Object) bool { return o != nil && len(ownerUIDs(o)) == 0 })
}

func TestForeground(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", &object{finalizers: []string{registry.ForegroundFinalizer}})
	blocking := e.create(cms, "default", "blocking", &object{owners: []ownerRef{ref(owner, true)}, finalizers: []string{hold}})
	e.create(cms, "default", "grandchild", owned(ref(blocking, true)))
	e.create(cms, "default", "free", owned(ref(owner, false)))
	e.delete(cms, "default", "owner")

	// The blocking dependent is deleted in the foreground, as it has a
	// dependent of its own, which goes first.
	e.waitFor(cms, "default", "blocking", "deleted in the foreground", func(o api.Object) bool {
		return deleting(o) && o.Metadata()["finalizers"] != nil && containsString(o, registry.ForegroundFinalizer)
	})
	e.waitGone(cms, "default", "grandchild")
	e.waitGone(cms, "default", "free")
	if o := e.get(cms, "default", "owner"); !deleting(o) || !containsString(o, registry.ForegroundFinalizer) {
		t.Fatalf("owner with a blocking dependent left: %v", o)
	}
	e.removeFinalizers(cms, "default", "blocking") // its hold and its foregroundDeletion: gone
	e.waitGone(cms, "default", "owner")
}

func TestForegroundNonBlockingDependent(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", &object{finalizers: []string{registry.ForegroundFinalizer}})
	e.create(cms, "default", "dep", &object{owners: []ownerRef{ref(owner, false)}, finalizers: []string{hold}})
	e.delete(cms, "default", "owner")
	// Nothing blocks the owner: it goes while its dependent is held.
	e.waitGone(cms, "default", "owner")
	e.waitFor(cms, "default", "dep", "deleted", deleting)
}

func containsString(o api.Object, finalizer string) bool {
	fs, _ := o.Metadata()["finalizers"].([]any)
	for _, f := range fs {
		if f == finalizer {
			return true
		}
	}
	return false
}

func TestOrphan(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", &object{finalizers: []string{registry.OrphanFinalizer}})
	other := e.create(cms, "default", "other", nil)
	e.create(cms, "default", "only", owned(ref(owner, true)))
	e.create(cms, "default", "two", owned(ref(owner, false), ref(other, false)))
	e.delete(cms, "default", "owner")
	e.waitGone(cms, "default", "owner")
	// The finalizer went only after the references.
	if o := e.get(cms, "default", "only"); o == nil || len(ownerUIDs(o)) != 0 {
		t.Fatalf("orphaned dependent: %v", o)
	}
	if o := e.get(cms, "default", "two"); o == nil || len(ownerUIDs(o)) != 1 || ownerUIDs(o)[0] != other.UID() {
		t.Fatalf("orphaned dependent with another owner: %v", o)
	}
}

func TestForegroundCycle(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	a := e.create(cms, "default", "a", &object{finalizers: []string{registry.ForegroundFinalizer}})
	b := e.create(cms, "default", "b", owned(ref(a, true)))
	_, err := e.reg.Update(t.Context(), cms, "default", "a", func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		next.SetMeta("ownerReferences", []any{map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "b", "uid": b.UID(), "blockOwnerDeletion": true}})
		return next, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	e.delete(cms, "default", "a")
	e.waitGone(cms, "default", "a")
	e.waitGone(cms, "default", "b")
}

func TestOwnerRecreated(t *testing.T) {
	e := newEnv(t)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", nil)
	e.create(cms, "default", "dep", owned(ref(owner, false)))
	// Deleted and made again before any collector saw either.
	e.delete(cms, "default", "owner")
	again := e.create(cms, "default", "owner", nil)
	e.create(cms, "default", "new-dep", owned(ref(again, false)))
	e.run(nil)
	e.waitGone(cms, "default", "dep")
	if o := e.get(cms, "default", "owner"); o == nil || o.UID() != again.UID() {
		t.Fatalf("recreated owner: %v", o)
	}
	if o := e.get(cms, "default", "new-dep"); o == nil {
		t.Fatal("dependent of the new owner deleted")
	}
}

func TestDependentWrittenWhileOwnerWaits(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", &object{finalizers: []string{registry.ForegroundFinalizer}})
	e.create(cms, "default", "held", &object{owners: []ownerRef{ref(owner, true)}, finalizers: []string{hold}})
	e.delete(cms, "default", "owner")
	e.waitFor(cms, "default", "held", "deleted", deleting)
	e.create(cms, "default", "late", owned(ref(owner, true)))
	e.waitGone(cms, "default", "late")
	e.removeFinalizers(cms, "default", "held")
	e.waitGone(cms, "default", "owner")

	// And one written after its owner is gone is collected too.
	e.create(cms, "default", "later", owned(ref(owner, true)))
	e.waitGone(cms, "default", "later")
}

func TestClusterScopedOwner(t *testing.T) {
	e := newEnv(t)
	tracked := newAttempts()
	e.run(tracked.record)
	cms, roles := e.configMaps(), e.res("rbac.authorization.k8s.io", "v1", "clusterroles")
	role := e.create(roles, "", "owner", nil)
	e.create(cms, "default", "dep", owned(ref(role, false)))
	e.create(cms, "other", "dep", owned(ref(role, false)))
	keeper := e.create(cms, "default", "keeper", nil)
	// A cluster-scoped dependent of a namespaced kind is never collected.
	invalid := e.create(roles, "", "invalid", owned(ref(keeper, false), ownerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "ghost-uid"}))
	e.delete(roles, "", "owner")
	e.waitGone(cms, "default", "dep")
	e.waitGone(cms, "other", "dep")

	tracked.wait(t, invalid.UID(), 1, func(err error) bool { return errors.Is(err, errNamespacedOwnerOfClusterScoped) })
	if e.get(roles, "", "invalid") == nil {
		t.Fatal("cluster-scoped dependent of a namespaced owner kind deleted")
	}
}

func TestAbsentOwners(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	e.create(cms, "default", "ghost-dep", owned(ownerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "never-was"}))
	e.waitGone(cms, "default", "ghost-dep")

	// An owner in another namespace is absent, as kube looks it up in the
	// dependent's.
	there := e.create(cms, "default", "there", nil)
	e.create(cms, "other", "elsewhere", owned(ref(there, false)))
	e.waitGone(cms, "other", "elsewhere")
	if e.get(cms, "default", "there") == nil {
		t.Fatal("the owner in the other namespace deleted")
	}
}

func TestUnknownOwnerKind(t *testing.T) {
	e := newEnv(t)
	tracked := newAttempts()
	e.run(tracked.record)
	cms := e.configMaps()
	widget := ownerRef{APIVersion: "example.com/v1", Kind: "Widget", Name: "w", UID: "widget-uid"}
	e.create(cms, "default", "dep", owned(widget))
	// The owner is retried, never taken for absent.
	tracked.wait(t, widget.UID, 2, isError[*mappingError])
	if e.get(cms, "default", "dep") == nil {
		t.Fatal("dependent of an unknown owner kind deleted")
	}
	// Once the kind is served, the owner is found absent.
	e.catalog.Replace("widgets.example.com", []*resource.Resource{{
		Group: "example.com", Version: "v1", Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", Namespaced: true,
	}})
	e.waitGone(cms, "default", "dep")
}

func TestCustomResourceOwner(t *testing.T) {
	e := newEnv(t)
	e.catalog.Replace("widgets.example.com", []*resource.Resource{{
		Group: "example.com", Version: "v1", Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList", Namespaced: true,
	}})
	e.run(nil)
	widgets, cms := e.res("example.com", "v1", "widgets"), e.configMaps()
	w := e.create(widgets, "default", "w", nil)
	e.create(cms, "default", "dep", owned(ref(w, true)))
	e.delete(widgets, "default", "w")
	e.waitGone(cms, "default", "dep")
}

func TestRestart(t *testing.T) {
	e := newEnv(t)
	stop := e.run(nil)
	cms := e.configMaps()
	bg := e.create(cms, "default", "bg", nil)
	fg := e.create(cms, "default", "fg", &object{finalizers: []string{registry.ForegroundFinalizer}})
	orphaning := e.create(cms, "default", "orphaning", &object{finalizers: []string{registry.OrphanFinalizer}})
	waiting := e.create(cms, "default", "waiting", &object{finalizers: []string{registry.ForegroundFinalizer}})
	stop()
	// A dependent of another resource, which the new collector must know
	// of before it lets its owner go.
	secrets := e.res("", "v1", "secrets")
	e.create(secrets, "default", "held", &object{owners: []ownerRef{ref(waiting, true)}, finalizers: []string{hold}})
	// Deleted while no collector runs.
	e.create(cms, "default", "bg-dep", owned(ref(bg, false)))
	e.create(cms, "default", "fg-dep", owned(ref(fg, true)))
	e.create(cms, "default", "orphan-dep", owned(ref(orphaning, true)))
	for _, name := range []string{"bg", "fg", "orphaning", "waiting"} {
		e.delete(cms, "default", name)
	}
	e.run(nil)
	e.waitGone(cms, "default", "bg-dep")
	e.waitGone(cms, "default", "fg-dep")
	e.waitGone(cms, "default", "fg")
	e.waitGone(cms, "default", "orphaning")
	if o := e.get(cms, "default", "orphan-dep"); o == nil || len(ownerUIDs(o)) != 0 {
		t.Fatalf("orphaned dependent: %v", o)
	}
	e.waitFor(secrets, "default", "held", "deleted", deleting)
	if o := e.get(cms, "default", "waiting"); !deleting(o) {
		t.Fatalf("owner of a blocking Secret: %v", o)
	}
	e.removeFinalizers(secrets, "default", "held")
	e.waitGone(cms, "default", "waiting")
}

// TestMonitorListsAgain ends the collector's watches (as a redefinition
// closes a cache) and deletes an owner while none runs: the list that
// follows no longer has it, and its dependent is collected.
func TestMonitorListsAgain(t *testing.T) {
	e := newEnv(t)
	e.run(nil)
	cms := e.configMaps()
	owner := e.create(cms, "default", "owner", nil)
	e.create(cms, "default", "dep", owned(ref(owner, false)))
	// Wait until the graph holds the dependent: the owner's absence is
	// then news only the next list can bring.
	e.create(cms, "default", "unrelated", owned(ownerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "ghost-uid"}))
	e.waitGone(cms, "default", "unrelated")
	resume := e.closeCaches()
	e.delete(cms, "default", "owner") // unseen by any watch
	resume()
	e.waitGone(cms, "default", "dep")
}

func TestRelistDropsWhatIsGone(t *testing.T) {
	g := &graph{nodes: map[string]*node{}, absent: newAbsentOwners(10)}
	m := newQueue[*node](metrics.New().Workqueues(), "test")
	g.toDelete, g.toOrphan = m, m
	cm := identity{APIVersion: "v1", Kind: "ConfigMap", Namespace: "default"}
	owner, dep := cm, cm
	owner.Name, owner.UID = "owner", "u1"
	dep.Name, dep.UID = "dep", "u2"
	g.apply(&event{typ: upsert, id: owner})
	g.apply(&event{typ: upsert, id: dep, owners: []ownerRef{{APIVersion: "v1", Kind: "ConfigMap", Name: "owner", UID: "u1"}}})
	if n := m.Len(); n != 0 {
		t.Fatalf("queued %d with every owner observed", n)
	}
	g.apply(&event{typ: relisted, id: identity{APIVersion: "v1", Kind: "ConfigMap"}, listed: map[string]struct{}{"u2": {}}})
	if _, ok := g.nodes["u1"]; ok {
		t.Fatal("a node the list no longer has stayed")
	}
	if item, _ := m.Get(); item.id != dep {
		t.Fatalf("queued %v, want the dependent", item.id)
	}
	if !g.absent.has(owner) {
		t.Fatal("the dropped owner is not known absent")
	}
}

// TestWaitSyncedStoppedQuietly: a collector stopped (its term over, the
// server closing) before its monitors have listed does not warn that it
// collects without them, as it does when the wait times out.
func TestWaitSyncedStoppedQuietly(t *testing.T) {
	var log bytes.Buffer
	c := New(Config{Log: slog.New(slog.NewTextHandler(&log, nil))})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cms := &resource.Resource{Version: "v1", Plural: "configmaps", Kind: "ConfigMap", Namespaced: true}
	c.waitSynced(ctx, []*monitor{{res: cms, synced: make(chan struct{})}})
	if log.Len() > 0 {
		t.Errorf("logged on a stop:\n%s", log.String())
	}
}

// TestCraftedReferences: references a client crafts delete nothing but
// its own objects. One naming, from another namespace, an owner that has
// dependents of its own (graphed first, so the owner's node is first
// known by the crafted coordinates) removes only the crafted dependent: the
// owner is not taken for absent by its real dependents. An object that
// names itself stands. Each real dependent also names an owner that never
// was, so that the collector weighs it: that reference alone goes.
func TestCraftedReferences(t *testing.T) {
	e := newEnv(t)
	cms := e.configMaps()
	ghost := ownerRef{APIVersion: "v1", Kind: "ConfigMap", Name: "ghost", UID: "never-was"}
	owner := e.create(cms, "default", "owner", nil)
	e.create(cms, "other", "crafted", owned(ref(owner, true)))
	e.create(cms, "default", "dep", owned(ref(owner, true), ghost))
	self := e.create(cms, "default", "self", nil)
	if _, err := e.reg.Update(context.Background(), cms, "default", "self", func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		next.SetMeta("ownerReferences", []any{
			map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "name": "self", "uid": self.UID()},
			map[string]any{"apiVersion": ghost.APIVersion, "kind": ghost.Kind, "name": ghost.Name, "uid": ghost.UID},
		})
		return next, nil
	}); err != nil {
		t.Fatal(err)
	}
	e.run(nil)
	e.waitGone(cms, "other", "crafted")
	for name, want := range map[string]string{"dep": owner.UID(), "self": self.UID()} {
		e.waitFor(cms, "default", name, "left with its real owner alone", func(o api.Object) bool {
			return o != nil && len(ownerUIDs(o)) == 1 && ownerUIDs(o)[0] == want
		})
	}
	if e.get(cms, "default", "owner") == nil {
		t.Fatal("the owner named from another namespace deleted")
	}
}
