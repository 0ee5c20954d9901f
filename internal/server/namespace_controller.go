package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/workqueue"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// Namespace deletion, as kube-controller-manager's namespace controller
// (pkg/controller/namespace): a namespace's first DELETE only marks it
// Terminating (registry.Delete); the leader follows the namespaces' watch
// cache and, for each marked namespace still holding the kubernetes entry
// in spec.finalizers, deletes every namespaced object in it through the
// registry (propagation Background, so that the objects' finalizers hold
// them and the garbage collector acts on their dependents), pods first,
// then records kube's five deletion conditions in its status. While
// content remains it looks again after kube's estimate; once none does it
// removes "kubernetes" from spec.finalizers through the finalize
// subresource's path, which deletes the namespace when no finalizer is
// left.
//
// As kube's, it looks at a namespace only namespaceDeletionGracePeriod
// after the namespace's change: a create that passed its namespace check
// just before the mark is stored by then, a burst of changes to a
// Terminating namespace makes one sweep, not one each, and the
// controller's own condition write brings the next sweep a grace period
// later, not at once. Pods are deleted at once (there is no kubelet), so the
// graceful-termination estimate is taken over the pods left after their
// deletion, those that finalizers hold, rather than before it.

const (
	// namespaceDeletionGracePeriod is kube's wait between a namespace's
	// change and its sync (Config.NamespaceDeletionGracePeriod).
	namespaceDeletionGracePeriod = 5 * time.Second
	// namespaceWorkers is kube's --concurrent-namespace-syncs default.
	namespaceWorkers = 10
	// namespaceRetry is how long the follower waits before it watches
	// again after its watch ended.
	namespaceRetry = time.Second
	// finalizerEstimateSeconds is kube's estimate of how long content held
	// by finalizers takes to go.
	finalizerEstimateSeconds = 15
	// deleteCollectionPage is how many objects one DeleteCollection or
	// List of namespace deletion reads at most (the registry's
	// DeleteUndecodable's page).
	deleteCollectionPage = 500
)

// The namespace condition types kube's namespace controller keeps, in
// its order, with the reason and message of each when nothing is wrong.
var namespaceConditions = []struct{ typ, okReason, okMessage string }{
	{"NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered", "All resources successfully discovered"},
	{"NamespaceDeletionGroupVersionParsingFailure", "ParsedGroupVersions", "All legacy kube types successfully parsed"},
	{"NamespaceDeletionContentFailure", "ContentDeleted", "All content successfully deleted, may be waiting on finalization"},
	{"NamespaceContentRemaining", "ContentRemoved", "All content successfully removed"},
	{"NamespaceFinalizersRemaining", "ContentHasNoFinalizers", "All content-preserving finalizers finished"},
}

// contentRemaining says that a namespace's content is not all gone yet:
// look again after about estimate seconds (kube's ResourcesRemainingError).
type contentRemaining struct{ estimate int64 }

func (e *contentRemaining) Error() string {
	return fmt.Sprintf("some content remains in the namespace, estimate %d seconds before it is removed", e.estimate)
}

// namespaceDeleter is the state of one run of the controller.
type namespaceDeleter struct {
	s                *Server
	namespaces, pods *resource.Resource
	queue            *workqueue.Queue[string]
}

// deleteNamespaces runs the namespace controller until ctx ends.
func (s *Server) deleteNamespaces(ctx context.Context) {
	d := &namespaceDeleter{s: s, queue: workqueue.New(workqueue.Options[string]{
		Name: "namespace", Metrics: s.metrics.Workqueues(),
		// kube's nsControllerRateLimiter: a failed namespace is retried at
		// least every minute.
		RateLimiter: workqueue.NewMaxOfRateLimiter(
			workqueue.NewItemExponentialFailureRateLimiter[string](5*time.Millisecond, time.Minute),
			workqueue.NewBucketRateLimiter[string](10, 100)),
	})}
	d.namespaces, _ = s.catalog.Get("", "v1", "namespaces")
	d.pods, _ = s.catalog.Get("", "v1", "pods")
	var wg sync.WaitGroup
	wg.Go(func() {
		s.followCache(ctx, d.namespaces, "namespace deletion", namespaceRetry, func(it watchcache.Item) {
			var ns struct {
				Metadata struct{ Name, DeletionTimestamp string }
			}
			if it.Type != api.Deleted && json.Unmarshal(it.Object, &ns) == nil && ns.Metadata.DeletionTimestamp != "" {
				d.queue.AddAfter(ns.Metadata.Name, s.cfg.NamespaceDeletionGracePeriod)
			}
		})
	})
	for range namespaceWorkers {
		wg.Go(func() { d.work(ctx) })
	}
	<-ctx.Done()
	d.queue.ShutDown()
	wg.Wait()
}

// work syncs each queued namespace until the queue shuts down.
func (d *namespaceDeleter) work(ctx context.Context) {
	for {
		name, shutdown := d.queue.Get()
		if shutdown {
			return
		}
		err := d.sync(ctx, name)
		var remaining *contentRemaining
		switch {
		case err == nil:
			d.queue.Forget(name)
		case ctx.Err() != nil:
		case errors.As(err, &remaining):
			d.queue.AddAfter(name, time.Duration(remaining.estimate/2+1)*time.Second)
		default:
			d.s.log.Warn("namespace deletion failed", "namespace", name, "err", err)
			d.queue.AddRateLimited(name)
		}
		d.queue.Done(name)
	}
}

// sync deletes the contents of namespace name, if it is being deleted
// and not finalized, and then finalizes it (kube's
// namespacedResourcesDeleter.Delete).
func (d *namespaceDeleter) sync(ctx context.Context, name string) error {
	ns, err := d.s.registry.Get(ctx, d.namespaces, "", name)
	switch {
	case isReason(err, api.StatusReasonNotFound):
		return nil
	case err != nil:
		return err
	case ns.MetaString("deletionTimestamp") == "" || !slices.Contains(stringsAt(ns, "spec", "finalizers"), resource.FinalizerKubernetes):
		return nil
	}
	estimate, err := d.deleteContent(ctx, ns)
	if err != nil {
		return err
	}
	if estimate > 0 {
		return &contentRemaining{estimate}
	}
	return d.finalize(ctx, name)
}

// stringsAt are the strings of the list at path in obj.
func stringsAt(obj api.Object, path ...string) []string {
	list, _ := resource.Path(obj, path...).([]any)
	out := make([]string, 0, len(list))
	for _, v := range list {
		if s, ok := v.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// contentLeft is what remains of one resource's objects in a namespace
// after their deletion (kube's gvrDeletionMetadata).
type contentLeft struct {
	estimate   int64          // seconds to wait; 0 for no estimate
	remaining  int            // objects left
	finalizers map[string]int // how many of them each finalizer holds
}

// deleteContent deletes every namespaced object in ns, pods first, and
// records the outcome in ns's conditions; it returns how many seconds to
// wait for what remains, 0 when nothing does (kube's deleteAllContent).
func (d *namespaceDeleter) deleteContent(ctx context.Context, ns api.Object) (int64, error) {
	deletedAt, _ := time.Parse(time.RFC3339, ns.MetaString("deletionTimestamp"))
	var errs []error
	var estimate int64
	remaining, held := map[string]int{}, map[string]int{}
	add := func(res *resource.Resource, left contentLeft, err error) {
		if err != nil {
			errs = append(errs, err)
		}
		estimate = max(estimate, left.estimate)
		if left.remaining > 0 {
			remaining[res.Plural+"."+res.Group] = left.remaining
			for f, n := range left.finalizers {
				held[f] += n
			}
		}
	}
	var others []*resource.Resource
	for _, res := range d.s.catalog.All() {
		// One version of each resource (the stored one), as kube's
		// discovery of the preferred versions; those without delete
		// (access reviews) have nothing stored.
		if res.Namespaced && res.Storage == nil && slices.Contains(res.ServedVerbs(), "delete") && res != d.pods {
			others = append(others, res)
		}
	}
	if d.pods != nil {
		left, err := d.deleteResource(ctx, d.pods, ns.Name(), deletedAt)
		if err != nil {
			err = fmt.Errorf("failed to delete pods for namespace: %s, err: %w", ns.Name(), err)
		}
		add(d.pods, left, err)
		if left.remaining > 0 {
			// kube deletes nothing else while pods remain, and records
			// only the errors.
			d.setConditions(ctx, ns.Name(), errs, nil, nil)
			return estimate, errors.Join(errs...)
		}
	}
	for _, res := range others {
		left, err := d.deleteResource(ctx, res, ns.Name(), deletedAt)
		add(res, left, err)
	}
	d.setConditions(ctx, ns.Name(), errs, remaining, held)
	return estimate, errors.Join(errs...)
}

// deleteResource deletes res's objects in namespace ns and reports what
// is left (kube's deleteAllContentForGroupVersionResource). kube uses
// DeleteCollection where a resource serves it and lists and deletes each
// object otherwise: the registry's DeleteCollection is that list and
// those deletes, here a page at a time; what is left is counted a page
// at a time too. Stored values that cannot be
// decoded, which kube's lists would fail on and the registry's skip, are
// deleted too.
func (d *namespaceDeleter) deleteResource(ctx context.Context, res *resource.Resource, ns string, deletedAt time.Time) (contentLeft, error) {
	if err := d.deleteAll(ctx, res, ns); err != nil {
		return contentLeft{}, err
	}
	out := contentLeft{finalizers: map[string]int{}}
	opts := registry.ListOptions{Limit: deleteCollectionPage}
	for {
		left, err := d.s.registry.List(ctx, res, ns, opts)
		if err != nil {
			return contentLeft{}, err
		}
		out.remaining += len(left.Items)
		for _, obj := range left.Items {
			for _, f := range stringsAt(obj, "metadata", "finalizers") {
				out.finalizers[f]++
			}
		}
		if res == d.pods {
			// The largest page estimate is the whole list's: each is its
			// longest grace period, or 0 once that has passed.
			out.estimate = max(out.estimate, podsEstimate(left.Items, deletedAt))
		}
		if left.Continue == "" {
			break
		}
		opts.Continue = left.Continue
	}
	if out.remaining == 0 {
		return contentLeft{}, nil
	}
	switch {
	case out.estimate > 0:
		return out, nil
	case len(out.finalizers) > 0:
		out.estimate = finalizerEstimateSeconds
		return out, nil
	}
	out.finalizers = nil
	return out, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %s/%s, Resource=%s", ns, res.Group, res.Version, res.Plural)
}

// deleteAll deletes res's objects in namespace ns, deleteCollectionPage
// at a time so that a large namespace is not held in memory at once.
func (d *namespaceDeleter) deleteAll(ctx context.Context, res *resource.Resource, ns string) error {
	opts := registry.ListOptions{Limit: deleteCollectionPage}
	for {
		page, deleted, err := d.s.registry.DeleteCollection(ctx, res, ns, opts, registry.DeleteOptions{Propagation: "Background"})
		for _, obj := range deleted {
			d.s.afterWrite(res, obj)
		}
		if err != nil {
			return err
		}
		if page.Continue == "" {
			return d.s.registry.DeleteUndecodable(ctx, res, ns)
		}
		opts.Continue = page.Continue
	}
}

// podsEstimate is the longest termination grace period of pods that have
// not finished, or 0 once that long has passed since the namespace's
// deletion (kube's estimateGracefulTermination).
func podsEstimate(pods []api.Object, deletedAt time.Time) int64 {
	var estimate int64
	for _, pod := range pods {
		if phase := resource.Path(pod, "status", "phase"); phase == "Succeeded" || phase == "Failed" {
			continue
		}
		if grace, ok := resource.Path(pod, "spec", "terminationGracePeriodSeconds").(json.Number); ok {
			if n, err := grace.Int64(); err == nil {
				estimate = max(estimate, n)
			}
		}
	}
	if time.Since(deletedAt) >= time.Duration(estimate)*time.Second {
		return 0
	}
	return estimate
}

// setConditions writes the namespace's deletion conditions as kube's
// namespaceConditionUpdater makes them from the deletion's errors and
// what remains (by resource, by finalizer), if they changed; a failure is
// logged, as kube's.
func (d *namespaceDeleter) setConditions(ctx context.Context, name string, errs []error, remaining, held map[string]int) {
	bad := map[string][2]string{} // by type: reason, message
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		sort.Strings(msgs)
		bad["NamespaceDeletionContentFailure"] = [2]string{"ContentDeletionFailed",
			fmt.Sprintf("Failed to delete all resource types, %d remaining: %v", len(errs), strings.Join(msgs, ", "))}
	}
	if len(remaining) > 0 {
		bad["NamespaceContentRemaining"] = [2]string{"SomeResourcesRemain",
			"Some resources are remaining: " + countsText(remaining, "%s has %d resource instances")}
	}
	if len(held) > 0 {
		bad["NamespaceFinalizersRemaining"] = [2]string{"SomeFinalizersRemain",
			"Some content in the namespace has finalizers remaining: " + countsText(held, "%s in %d resource instances")}
	}
	_, err := d.s.registry.Update(ctx, partView(d.namespaces), "", name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		// No precondition: a write in between is read again, not a 409.
		delete(next.Metadata(), "resourceVersion")
		setNamespaceConditions(next, bad, time.Now())
		return next, nil
	})
	if err != nil && ctx.Err() == nil && !isReason(err, api.StatusReasonNotFound) {
		d.s.log.Warn("namespace deletion: updating the conditions", "namespace", name, "err", err)
	}
}

// countsText prints each name and count with format, sorted, joined by
// ", ".
func countsText(counts map[string]int, format string) string {
	var parts []string
	for name, n := range counts {
		parts = append(parts, fmt.Sprintf(format, name, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// setNamespaceConditions sets ns's deletion conditions (kube's
// updateConditions): each type in bad as it says, the others as fine; a
// condition's lastTransitionTime changes only with its status.
func setNamespaceConditions(ns api.Object, bad map[string][2]string, now time.Time) {
	status := resource.MapAt(ns, "status")
	conds, _ := status["conditions"].([]any)
	conds = slices.Clone(conds)
	stamp := api.NewTime(now).Format(time.RFC3339)
	for _, c := range namespaceConditions {
		want := map[string]any{"type": c.typ, "status": "False", "lastTransitionTime": stamp, "reason": c.okReason, "message": c.okMessage}
		if b, ok := bad[c.typ]; ok {
			want["status"], want["reason"], want["message"] = "True", b[0], b[1]
		}
		i := slices.IndexFunc(conds, func(v any) bool {
			m, _ := v.(map[string]any)
			return m["type"] == c.typ
		})
		if i < 0 {
			conds = append(conds, want)
			continue
		}
		old, _ := conds[i].(map[string]any)
		if old["status"] == want["status"] {
			want["lastTransitionTime"] = old["lastTransitionTime"]
		}
		conds[i] = want
	}
	status["conditions"] = conds
}

// finalize removes the kubernetes entry from namespace name's
// spec.finalizers through the finalize subresource's path, as kube's
// finalizeNamespace (the rest sorted, once each); with no finalizer left
// that deletes the namespace.
func (d *namespaceDeleter) finalize(ctx context.Context, name string) error {
	view := partResource(d.namespaces, "finalize")
	written, err := d.s.registry.Update(ctx, view, "", name, func(cur api.Object) (api.Object, error) {
		next := cur.DeepCopy()
		delete(next.Metadata(), "resourceVersion") // as setConditions
		fins := slices.DeleteFunc(stringsAt(cur, "spec", "finalizers"), func(f string) bool { return f == resource.FinalizerKubernetes })
		slices.Sort(fins)
		if spec := resource.MapAt(next, "spec"); len(fins) > 0 {
			spec["finalizers"] = api.StringList(slices.Compact(fins))
		} else {
			delete(spec, "finalizers") // omitempty
		}
		return d.namespaces.Parts["finalize"].Write(cur, next), nil
	})
	if isReason(err, api.StatusReasonNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	if written.Deleted != nil {
		d.s.afterWrite(d.namespaces, written.Deleted)
	} else {
		d.s.afterWrite(d.namespaces, written.Object)
	}
	return nil
}
