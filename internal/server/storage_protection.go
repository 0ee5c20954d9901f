package server

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/workqueue"
	"github.com/listwatch/listwatch/internal/server/admission/plugins"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// Storage protection, as kube-controller-manager's pvc-protection,
// pv-protection and vac-protection controllers (pkg/controller/volume):
// the finalizer StorageObjectInUseProtection gives a claim, a volume or a
// volume attributes class is removed once the object is being deleted
// and nothing uses it, and given back to one that is not being deleted
// and lacks it. The leader follows the watch caches of pods, claims,
// volumes and classes; each event queues the objects it may free on their
// kind's queue, named as kube's controllers name theirs (pvcprotection,
// pvprotection, vacprotection: the workqueue_* metrics' name label), and
// one worker per queue looks at each, as kube runs one per controller.
//
// What counts as a use is kube 1.37's:
//   - a claim: a pod of its namespace with spec.nodeName set (kubelet
//     starts no pod that is not scheduled) naming it in a
//     persistentVolumeClaim volume, whatever the pod's phase (a finished
//     pod keeps its claim until it is deleted), or in an ephemeral volume
//     (claim <pod>-<volume>, controlled by the pod) unless the pod was
//     deleted with grace period 0. When the cache shows none, the pods'
//     cache is first brought up to the store's revision, as kube lists
//     the pods live before it removes the finalizer.
//   - a volume: its status.phase is Bound.
//   - a class: a volume names it in spec.volumeAttributesClassName, or a
//     claim in spec.volumeAttributesClassName,
//     status.currentVolumeAttributesClassName or
//     status.modifyVolumeStatus.targetVolumeAttributesClassName.
//
// As kube's pvc-protection controller, it also keeps the Unused condition
// of a bound claim not being deleted (PersistentVolumeClaimUnusedSinceTime,
// beta and on in 1.37): False while a pod of its namespace that has not
// terminated names it, scheduled or not, True otherwise, set when it is
// missing or changes.

// protectionRetry is how long a follower waits before it watches again
// after its watch ended.
const protectionRetry = time.Second

// protectedKind is which of the three an item names, and so which queue
// holds it.
type protectedKind uint8

const (
	protectedClaim protectedKind = iota
	protectedVolume
	protectedClass
)

// protectionQueues are the names of the kinds' queues, kube's controllers'
// (their workqueue_* metrics' name label).
var protectionQueues = [...]string{protectedClaim: "pvcprotection", protectedVolume: "pvprotection", protectedClass: "vacprotection"}

// protectedItem names an object for the protection worker to look at.
type protectedItem struct {
	kind      protectedKind
	namespace string
	name      string
}

// storageUse is what the protection controllers read of pods, claims,
// volumes and classes (encoding/json matches the field names without
// regard to case).
type storageUse struct {
	Metadata struct {
		Name                       string
		Namespace                  string
		UID                        string
		ResourceVersion            string
		DeletionTimestamp          string
		DeletionGracePeriodSeconds *int64
		Finalizers                 []string
		OwnerReferences            []struct {
			UID        string
			Controller bool
		}
	}
	Spec struct {
		NodeName string // a pod's
		Volumes  []struct {
			Name                  string
			PersistentVolumeClaim *struct{ ClaimName string }
			Ephemeral             *struct{}
		} // a pod's
		VolumeAttributesClassName string // a claim's or a volume's
	}
	Status struct {
		Phase                            string // a pod's, a claim's or a volume's
		CurrentVolumeAttributesClassName string // a claim's
		ModifyVolumeStatus               *struct{ TargetVolumeAttributesClassName string }
		Conditions                       []struct{ Type, Status string } // a claim's
		// a pod's
		InitContainerStatuses, ContainerStatuses, EphemeralContainerStatuses []containerState
	}
}

// containerState is what storage protection reads of a container's status.
type containerState struct {
	State struct{ Terminated, Waiting *struct{} }
}

func (u *storageUse) deleting() bool { return u.Metadata.DeletionTimestamp != "" }

func (u *storageUse) has(finalizer string) bool {
	return slices.Contains(u.Metadata.Finalizers, finalizer)
}

// needsLook reports whether an object protected by finalizer has work for
// the controller: held by it while being deleted, or not being deleted
// and without it (kube's IsDeletionCandidate and NeedToAddFinalizer).
func (u *storageUse) needsLook(finalizer string) bool {
	return u.deleting() == u.has(finalizer)
}

// classNames are the volume attributes classes a claim or volume names.
func (u *storageUse) classNames() []string {
	var names []string
	for _, n := range []string{u.Spec.VolumeAttributesClassName, u.Status.CurrentVolumeAttributesClassName} {
		if n != "" {
			names = append(names, n)
		}
	}
	if m := u.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		names = append(names, m.TargetVolumeAttributesClassName)
	}
	return names
}

// usesClaim reports whether a pod keeps claim from being deleted (kube's
// podUsesPVCForDeletion).
func (pod *storageUse) usesClaim(claim *storageUse) bool {
	// kube's podIsShutDown: kubelet is done with it, or it was force-deleted.
	shutDown := pod.deleting() && pod.Metadata.DeletionGracePeriodSeconds != nil && *pod.Metadata.DeletionGracePeriodSeconds == 0
	return pod.Spec.NodeName != "" && pod.namesClaim(claim, !shutDown)
}

// referencesClaim reports whether a pod keeps claim's Unused condition
// False (kube's podUsesPVCForUnusedSince): scheduled or not, unless it
// has terminated.
func (pod *storageUse) referencesClaim(claim *storageUse) bool {
	return !pod.terminated() && pod.namesClaim(claim, true)
}

// namesClaim reports whether a persistentVolumeClaim volume of the pod
// names claim or, if ephemeral, an ephemeral volume whose claim it is
// (<pod>-<volume>, controlled by the pod).
func (pod *storageUse) namesClaim(claim *storageUse, ephemeral bool) bool {
	for _, v := range pod.Spec.Volumes {
		if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Metadata.Name ||
			ephemeral && v.Ephemeral != nil && pod.Metadata.Name+"-"+v.Name == claim.Metadata.Name && claim.controlledBy(pod.Metadata.UID) {
			return true
		}
	}
	return false
}

// terminated reports whether a pod has finished, or is being deleted
// with no container running (kube's volumeutil.IsPodTerminated).
func (pod *storageUse) terminated() bool {
	st := &pod.Status
	if st.Phase == "Failed" || st.Phase == "Succeeded" {
		return true
	}
	running := func(cs containerState) bool { return cs.State.Terminated == nil && cs.State.Waiting == nil }
	return pod.deleting() && !slices.ContainsFunc(st.InitContainerStatuses, running) &&
		!slices.ContainsFunc(st.ContainerStatuses, running) && !slices.ContainsFunc(st.EphemeralContainerStatuses, running)
}

// controlledBy reports whether u's controller is the object of uid.
func (u *storageUse) controlledBy(uid string) bool {
	for _, r := range u.Metadata.OwnerReferences {
		if r.Controller {
			return r.UID == uid
		}
	}
	return false
}

// mayNameClaims reports whether a pod's JSON may name a claim: most pods
// name none, and are not decoded.
func mayNameClaims(pod []byte) bool {
	return bytes.Contains(pod, []byte(`"persistentVolumeClaim"`)) || bytes.Contains(pod, []byte(`"ephemeral"`))
}

// claimNames are the claims a pod's volumes name.
func (pod *storageUse) claimNames() []string {
	var names []string
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			names = append(names, v.PersistentVolumeClaim.ClaimName)
		case v.Ephemeral != nil:
			names = append(names, pod.Metadata.Name+"-"+v.Name)
		}
	}
	return names
}

// storageProtection is the state of one run of the controllers.
type storageProtection struct {
	s                              *Server
	pods, claims, volumes, classes *resource.Resource
	queues                         [len(protectionQueues)]*workqueue.Queue[protectedItem] // by kind
}

// protectStorage runs the three protection controllers until ctx ends.
func (s *Server) protectStorage(ctx context.Context) {
	p := &storageProtection{s: s}
	for kind, name := range protectionQueues {
		p.queues[kind] = workqueue.New(workqueue.Options[protectedItem]{Name: name, Metrics: s.metrics.Workqueues()})
	}
	p.pods, _ = s.catalog.Get("", "v1", "pods")
	p.claims, _ = s.catalog.Get("", "v1", "persistentvolumeclaims")
	p.volumes, _ = s.catalog.Get("", "v1", "persistentvolumes")
	p.classes, _ = s.catalog.Get("storage.k8s.io", "v1", "volumeattributesclasses")
	var wg sync.WaitGroup
	for _, res := range []*resource.Resource{p.pods, p.claims, p.volumes, p.classes} {
		wg.Go(func() { p.follow(ctx, res) })
	}
	for _, q := range p.queues {
		wg.Go(func() { p.work(ctx, q) })
	}
	<-ctx.Done()
	for _, q := range p.queues {
		q.ShutDown()
	}
	wg.Wait()
}

// follow queues what each of res's changes may free, until ctx ends.
func (p *storageProtection) follow(ctx context.Context, res *resource.Resource) {
	// classes are, by object key, the classes each claim or volume named
	// at its last change: a class it stops naming may be freed.
	classes := map[string][]string{}
	p.s.followCache(ctx, res, "storage protection", protectionRetry, func(it watchcache.Item) {
		if res == p.pods && !mayNameClaims(it.Object) {
			return
		}
		var u storageUse
		if json.Unmarshal(it.Object, &u) == nil { // the cache decoded it: cannot fail
			p.queueFreed(res, it.Type == api.Deleted, &u, classes)
		}
	})
}

// queueFreed queues the objects an event of u, of res, may free or leave
// without their finalizer.
func (p *storageProtection) queueFreed(res *resource.Resource, deleted bool, u *storageUse, classes map[string][]string) {
	md := &u.Metadata
	if res == p.pods {
		for _, name := range u.claimNames() {
			p.add(protectedItem{protectedClaim, md.Namespace, name})
		}
		return
	}
	if res == p.classes {
		if !deleted && u.needsLook(plugins.VACProtectionFinalizer) {
			p.add(protectedItem{kind: protectedClass, name: md.Name})
		}
		return
	}
	kind, finalizer := protectedClaim, plugins.PVCProtectionFinalizer
	if res == p.volumes {
		kind, finalizer = protectedVolume, plugins.PVProtectionFinalizer
	}
	if !deleted && (u.needsLook(finalizer) || res == p.claims && !u.unusedKnown()) {
		p.add(protectedItem{kind, md.Namespace, md.Name})
	}
	// The classes it named at its last change may be freed now that it
	// names others or is gone; those it names as it goes too.
	key := md.Namespace + "/" + md.Name
	names, freed := u.classNames(), classes[key]
	if deleted {
		names, freed = nil, append(freed, names...)
	}
	for _, name := range freed {
		p.add(protectedItem{kind: protectedClass, name: name})
	}
	if len(names) > 0 {
		classes[key] = names
	} else {
		delete(classes, key)
	}
}

// add queues it on its kind's queue.
func (p *storageProtection) add(it protectedItem) { p.queues[it.kind].Add(it) }

// work looks at each object queued on q until q shuts down; a look that
// fails, a write that conflicts too, is retried with backoff, as kube's
// controllers retry (the watch may bring no event that queues it again: a
// claim whose Unused condition is already known).
func (p *storageProtection) work(ctx context.Context, q *workqueue.Queue[protectedItem]) {
	for {
		it, shutdown := q.Get()
		if shutdown {
			return
		}
		err := p.look(ctx, it)
		switch {
		case err == nil, isReason(err, api.StatusReasonNotFound):
			q.Forget(it)
		case ctx.Err() != nil:
		case isReason(err, api.StatusReasonConflict):
			q.AddRateLimited(it)
		default:
			p.s.log.Warn("storage protection: looking at an object", "namespace", it.namespace, "name", it.name, "err", err)
			q.AddRateLimited(it)
		}
		q.Done(it)
	}
}

// look removes or adds the protection finalizer of the object it names,
// and keeps a bound claim's Unused condition, as its state in the cache
// asks.
func (p *storageProtection) look(ctx context.Context, it protectedItem) error {
	res, finalizer := p.claims, plugins.PVCProtectionFinalizer
	inUse := func(ctx context.Context, u *storageUse, _ int64) (bool, error) {
		return p.claimInUse(ctx, u, (*storageUse).usesClaim)
	}
	switch it.kind {
	case protectedVolume:
		res, finalizer = p.volumes, plugins.PVProtectionFinalizer
		inUse = func(_ context.Context, u *storageUse, _ int64) (bool, error) { return u.Status.Phase == "Bound", nil }
	case protectedClass:
		res, finalizer, inUse = p.classes, plugins.VACProtectionFinalizer, p.classInUse
	}
	c, err := p.s.readyCache(ctx, res)
	if c == nil || err != nil {
		return err
	}
	o := c.Get(res.Key(it.namespace, it.name))
	if o == nil {
		return nil
	}
	var u storageUse
	if err := json.Unmarshal(o.JSON, &u); err != nil {
		return err
	}
	if it.kind == protectedClaim && !u.deleting() && u.Status.Phase == "Bound" {
		used, err := p.claimInUse(ctx, &u, (*storageUse).referencesClaim)
		if err != nil {
			return err
		}
		if err := p.setUnused(ctx, &u, !used); err != nil {
			return err
		}
	}
	switch {
	case u.deleting() && u.has(finalizer):
		used, err := inUse(ctx, &u, o.Rev)
		if used || err != nil {
			return err
		}
		return p.setFinalizer(ctx, res, &u, finalizer, false)
	case !u.deleting() && !u.has(finalizer):
		return p.setFinalizer(ctx, res, &u, finalizer, true)
	}
	return nil
}

// claimInUse reports whether a pod of claim's namespace uses it, as uses
// says: first from the pods' cache as it is, then, if none does, from the
// cache brought up to the store's current revision (kube's live list of
// the namespace's pods).
func (p *storageProtection) claimInUse(ctx context.Context, claim *storageUse, uses func(pod, claim *storageUse) bool) (bool, error) {
	c, err := p.s.readyCache(ctx, p.pods)
	if c == nil || err != nil {
		return true, err
	}
	used := func() (bool, error) {
		objs, _ := c.List(watchcache.Filter{Namespace: claim.Metadata.Namespace})
		for _, o := range objs {
			if !mayNameClaims(o.JSON) {
				continue
			}
			var pod storageUse
			if err := json.Unmarshal(o.JSON, &pod); err != nil {
				return true, err
			}
			if uses(&pod, claim) {
				return true, nil
			}
		}
		return false, nil
	}
	if inUse, err := used(); inUse || err != nil {
		return inUse, err
	}
	if err := p.s.waitFresh(ctx, c, -1); err != nil { // the store's current revision
		return true, err
	}
	return used()
}

// classInUse reports whether a claim or volume names class, from their
// caches once they hold every write up to rev, the class's last, so that
// one that named it before it was marked is seen.
func (p *storageProtection) classInUse(ctx context.Context, class *storageUse, rev int64) (bool, error) {
	for _, res := range []*resource.Resource{p.volumes, p.claims} {
		c, err := p.s.readyCache(ctx, res)
		if c == nil || err != nil {
			return true, err
		}
		if err := p.s.waitFresh(ctx, c, rev); err != nil {
			return true, err
		}
		objs, _ := c.List(watchcache.Filter{})
		for _, o := range objs {
			var u storageUse
			if err := json.Unmarshal(o.JSON, &u); err != nil {
				return true, err
			}
			if slices.Contains(u.classNames(), class.Metadata.Name) {
				return true, nil
			}
		}
	}
	return false, nil
}

// The Unused condition of a bound claim (kube's
// PersistentVolumeClaimUnusedSinceTime, beta and on in 1.37).
const (
	claimUnused        = "Unused"
	claimUsedReason    = "PodUsingPVC"
	claimUsedMessage   = "A pod is currently referencing this PVC"
	claimUnusedReason  = "NoPodsUsingPVC"
	claimUnusedMessage = "No pods are currently referencing this PVC"
)

// unusedKnown reports whether a claim has an Unused condition.
func (u *storageUse) unusedKnown() bool {
	return slices.ContainsFunc(u.Status.Conditions, func(c struct{ Type, Status string }) bool { return c.Type == claimUnused })
}

// setUnused sets a claim's Unused condition to unused, with the time of
// the change, if it is not so already and the claim is still at u's
// revision (kube's updateUnusedCondition).
func (p *storageProtection) setUnused(ctx context.Context, claim *storageUse, unused bool) error {
	status, reason, message := "False", claimUsedReason, claimUsedMessage
	if unused {
		status, reason, message = "True", claimUnusedReason, claimUnusedMessage
	}
	for _, c := range claim.Status.Conditions {
		if c.Type == claimUnused && (c.Status == "True") == unused {
			return nil
		}
	}
	_, err := p.s.registry.Update(registry.Detached(ctx), partView(p.claims), claim.Metadata.Namespace, claim.Metadata.Name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		st := mapAt(next, "status")
		if st == nil {
			st = map[string]any{}
			next["status"] = st
		}
		cond := map[string]any{"type": claimUnused, "status": status, "lastTransitionTime": time.Now().UTC().Format(time.RFC3339), "reason": reason, "message": message}
		conds, _ := st["conditions"].([]any)
		conds = slices.Clone(conds)
		i := slices.IndexFunc(conds, func(c any) bool {
			m, _ := c.(map[string]any)
			return m["type"] == claimUnused
		})
		if i >= 0 {
			conds[i] = cond
		} else {
			conds = append(conds, cond)
		}
		st["conditions"] = conds
		next.Metadata()["resourceVersion"] = claim.Metadata.ResourceVersion
		return next, nil
	})
	return err
}

// setFinalizer adds finalizer to the object u is, or removes it, if the
// object is still at u's revision (a Conflict otherwise), as kube's
// controllers update the object their informer gave them. Removing the
// last finalizer of an object being deleted deletes it.
func (p *storageProtection) setFinalizer(ctx context.Context, res *resource.Resource, u *storageUse, finalizer string, add bool) error {
	_, err := p.s.registry.Update(registry.Detached(ctx), res, u.Metadata.Namespace, u.Metadata.Name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		md := next.Metadata()
		fins, _ := md["finalizers"].([]any)
		fins = slices.DeleteFunc(slices.Clone(fins), func(f any) bool { return f == finalizer })
		if add {
			fins = append(fins, finalizer)
		}
		if len(fins) == 0 {
			delete(md, "finalizers")
		} else {
			md["finalizers"] = fins
		}
		md["resourceVersion"] = u.Metadata.ResourceVersion
		return next, nil
	})
	return err
}
