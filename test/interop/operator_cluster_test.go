package interop

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/listwatch/listwatch/internal/testwait"
)

// Sizes of the operator's run on a cluster: enough writes that the kills
// fall among them, few enough for seconds under the race detector.
const (
	clusterWidgets = 6 // Widgets the operator reconciles
	clusterRounds  = 4 // spec updates of each, written while the cluster fails
)

// TestOperatorOnCluster runs the operator (kube's leader election timings)
// through the balancer of two servers on a three-member etcd cluster while
// the test updates its Widgets' specs; among those writes it kills the
// etcd leader, then SIGKILLs the server the operator's informers watch.
// The operator converges (ConfigMap, status, finalizer, events of the last
// generation), its informers resume their watches on the other server
// without a relist (none is forced: the survivor's history covers the
// run), and every write acknowledged, to the test or to the operator, is
// there at the end at or after the resourceVersion acknowledged.
func TestOperatorOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster and two servers")
	}
	cfg, c := StartCluster(t, listwatchBin(t))
	cfg.QPS = -1 // the times measured are the cluster's, not a client rate limit's
	installWidgetDefinitionOn(t, cfg, c)
	first, second := hostPort(t, c.Servers[0].URL), hostPort(t, c.Servers[1].URL)
	// The operator connects while only the first server is behind the
	// balancer, so that the server killed is the one serving its watches.
	c.Balancer.SetBackends(first)
	f := newWidgetFixture(t, cfg)
	op := runOperator(t, cfg, operatorOptions{id: "a", namespace: f.ns, releaseOnCancel: true, election: kubeElection})
	names := make([]string, clusterWidgets)
	for i := range names {
		names[i] = fmt.Sprintf("w-%d", i)
		f.createWidget(t, names[i], colorAt(0), "")
	}
	for _, n := range names {
		f.waitConverged(t, n, map[string]string{"color": colorAt(0), "secretRevision": "", "reconciler": "a"})
	}
	c.Balancer.SetBackends(first, second)

	ctx, cancel := context.WithTimeout(t.Context(), failTimeout)
	defer cancel()
	log := &ackLog{changed: make(chan struct{})}
	var (
		writer   sync.WaitGroup
		writeErr error // set by the writer before it ends
	)
	writer.Go(func() {
		for round := 1; round <= clusterRounds; round++ {
			for _, n := range names {
				write := func(ctx context.Context) (string, error) { return f.writeColor(ctx, n, colorAt(round)) }
				if writeErr = log.retry(ctx, n, round, write); writeErr != nil {
					cancel()
					return
				}
			}
		}
	})
	writes := clusterWidgets * clusterRounds
	log.waitFor(ctx, writes/3)
	etcdKilled := time.Now()
	leader := c.Etcd.KillLeader(t)
	t.Logf("killed etcd member %d (the leader) after %d writes", leader, log.count())
	log.waitFor(ctx, 2*writes/3)
	watchesBefore := map[string]int{}
	for _, collection := range watchedCollections {
		watchesBefore[collection] = op.requests[collection].Counts().Watches
	}
	serverKilled := time.Now()
	c.KillServer(0)
	t.Logf("killed the operator's server after %d writes", log.count())
	writer.Wait()
	if writeErr != nil {
		t.Fatal(writeErr)
	}
	written := time.Now()
	t.Logf("%d writes acknowledged; retried: %v; a write acknowledged %v after the etcd leader's death, %v after the server's",
		log.count(), log.retries(), log.stall(etcdKilled).Round(time.Millisecond), log.stall(serverKilled).Round(time.Millisecond))

	last := colorAt(clusterRounds)
	for _, n := range names {
		checkGeneration(t, f.waitConverged(t, n, map[string]string{"color": last, "secretRevision": "", "reconciler": "a"}), 1+clusterRounds)
	}
	t.Logf("every Widget converged %v after the server's death, %v after the last write",
		time.Since(serverKilled).Round(time.Millisecond), time.Since(written).Round(time.Millisecond))
	for _, n := range names {
		f.waitEvents(t, n, "ConfigMapSynced", "Reconciled")
		f.waitEventNote(t, n, fmt.Sprintf("generation %d is ready", 1+clusterRounds))
	}

	for name, a := range log.last() {
		var w Widget
		if err := f.cl.Get(ctx, f.key(name), &w); err != nil {
			t.Errorf("widget %s, acknowledged at %s: %v", name, a.rv, err)
		} else if w.Spec.Color != colorAt(a.gen) || revision(t, w.ResourceVersion) < revision(t, a.rv) {
			t.Errorf("widget %s is %s at %s, want its last acknowledged write: %s at or after %s", name, w.Spec.Color, w.ResourceVersion, colorAt(a.gen), a.rv)
		}
	}
	acked := op.ackedWrites()
	for _, obj := range acked {
		live := obj.DeepCopyObject().(client.Object)
		if err := f.cl.Get(ctx, client.ObjectKeyFromObject(obj), live); err != nil {
			t.Errorf("%T %s, acknowledged to the operator at %s: %v", obj, obj.GetName(), obj.GetResourceVersion(), err)
		} else if revision(t, live.GetResourceVersion()) < revision(t, obj.GetResourceVersion()) {
			t.Errorf("%T %s at %s, acknowledged to the operator at %s", obj, obj.GetName(), live.GetResourceVersion(), obj.GetResourceVersion())
		}
	}
	if len(acked) != 2*clusterWidgets {
		t.Errorf("the operator had writes of %d objects acknowledged, want %d (each Widget and its ConfigMap)", len(acked), 2*clusterWidgets)
	}
	op.checkWatches(t, false)
	for _, collection := range watchedCollections {
		if n := op.requests[collection].Counts().Watches; n <= watchesBefore[collection] {
			t.Errorf("the operator did not watch %s again after its server died: %d watches before, %d after", collection, watchesBefore[collection], n)
		}
	}
}

// installWidgetDefinitionOn installs the Widget definition through cfg
// and waits until every server of c serves Widgets: the servers other than
// the one that established it serve it once their watch of etcd brings
// it, a moment later, and a client behind the balancer may meet one of
// them first (kube-apiserver, several on one etcd, waits 5 s before it
// sets Established for the same race: customresource_handler.go).
func installWidgetDefinitionOn(t *testing.T, cfg *rest.Config, c *Cluster) {
	t.Helper()
	installWidgetDefinition(t, cfg)
	for _, s := range c.Servers {
		waitServed(t, s.URL+"/apis/"+widgetGroup+"/v1/widgets")
	}
}

// colorAt is the color the test gives its Widgets at a round of writes.
func colorAt(round int) string { return fmt.Sprintf("color-%d", round) }

// writeColor reads the Widget name and updates its color, returning the
// resourceVersion of the write.
func (f *widgetFixture) writeColor(ctx context.Context, name, color string) (string, error) {
	var w Widget
	if err := f.cl.Get(ctx, f.key(name), &w); err != nil {
		return "", err
	}
	w.Spec.Color = color
	if err := f.cl.Update(ctx, &w); err != nil {
		return "", err
	}
	return w.ResourceVersion, nil
}

// waitEventNote waits until an events.k8s.io/v1 event about the Widget
// name carries note.
func (f *widgetFixture) waitEventNote(t testing.TB, name, note string) {
	t.Helper()
	waitUntil(t, fmt.Sprintf("an event %q about widget %s", note, name), func(ctx context.Context) (bool, string, error) {
		events, err := f.cs.EventsV1().Events(f.ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=" + name})
		if err != nil {
			return false, "", err
		}
		var notes []string
		for _, e := range events.Items {
			notes = append(notes, e.Note)
		}
		return slices.Contains(notes, note), fmt.Sprintf("notes %q", notes), nil
	})
}

// TestOperatorGarbageCollectionOnCluster deletes the operator's Widgets
// with each propagation policy through the balancer of two servers on one
// etcd cluster, of which the one holding the controller Lease collects
// (see TestOperatorGarbageCollection). Then it SIGKILLs that server: the
// other takes the Lease over and collects the dependents of a Widget
// deleted just before the kill, of one deleted after it (before the
// takeover: only the new collector's caches can tell it), and of one
// deleted in the foreground afterwards.
func TestOperatorGarbageCollectionOnCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster and two servers")
	}
	const duration, retry = 4 * time.Second, 500 * time.Millisecond
	cfg, c := StartCluster(t, listwatchBin(t), "--leader-elect-lease-duration", duration.String(),
		"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", retry.String())
	cfg.QPS = -1 // the times measured are the cluster's, not a client rate limit's
	installWidgetDefinitionOn(t, cfg, c)
	f, _ := collectWithEachPolicy(t, cfg, kubeElection)

	// The operator's Widget "before", whose ConfigMap it controls, and
	// Widgets the operator does not see (another namespace), which own a
	// ConfigMap each: deleted, they go at once (no finalizer).
	f.createWidget(t, "before", "red", "")
	f.waitConverged(t, "before", map[string]string{"color": "red", "secretRevision": "", "reconciler": "a"})
	other := *f
	ns, err := f.cs.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "unwatched-"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	other.ns = ns.Name
	after, later := other.ownedConfigMap(t, "after"), other.ownedConfigMap(t, "later")

	collector := slices.IndexFunc(c.Servers, leadsControllers)
	if collector < 0 || leadsControllers(c.Servers[1-collector]) {
		t.Fatalf("server %d leads the controllers, want exactly one of the two", collector)
	}
	survivor := c.Servers[1-collector]
	deleteWith(t, f, &Widget{ObjectMeta: metav1.ObjectMeta{Name: "before", Namespace: f.ns}}, metav1.DeletePropagationBackground)
	c.KillServer(collector)
	killed := time.Now()
	deleteWith(t, &other, after, metav1.DeletePropagationBackground)
	var cm corev1.ConfigMap
	if err := other.cl.Get(t.Context(), other.key("after"), &cm); err != nil || cm.DeletionTimestamp != nil {
		t.Fatalf("widget after's ConfigMap before any server took the collector over: %v, deletion %v", err, cm.DeletionTimestamp)
	}
	if leadsControllers(survivor) {
		t.Fatalf("the survivor took over %v after the kill, before the test checked that nothing collected", time.Since(killed))
	}

	testwait.Until(t, binStartTimeout, "the survivor to lead", func() bool { return leadsControllers(survivor) })
	tookOver := time.Now()
	f.waitGone(t, &corev1.ConfigMap{}, "before")
	other.waitGone(t, &corev1.ConfigMap{}, "after")
	t.Logf("took the collector over %v after the kill; collected what was deleted before it %v later",
		tookOver.Sub(killed).Round(time.Millisecond), time.Since(tookOver).Round(time.Millisecond))

	deleteWith(t, &other, later, metav1.DeletePropagationForeground)
	other.waitGone(t, &corev1.ConfigMap{}, "later")
	other.waitGone(t, &Widget{}, "later")
}

// ownedConfigMap creates the Widget name and a ConfigMap of the same name
// that it owns (blocking its deletion), and returns the Widget.
func (f *widgetFixture) ownedConfigMap(t testing.TB, name string) *Widget {
	t.Helper()
	w := &Widget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns}, Spec: WidgetSpec{Color: "red"}}
	if err := f.cl.Create(t.Context(), w); err != nil {
		t.Fatalf("create widget %s: %v", name, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: f.ns, OwnerReferences: []metav1.OwnerReference{{
		APIVersion: widgetGV.String(), Kind: "Widget", Name: name, UID: w.UID, BlockOwnerDeletion: ptr.To(true)}}}}
	if err := f.cl.Create(t.Context(), cm); err != nil {
		t.Fatalf("create configmap %s: %v", name, err)
	}
	return w
}

// deleteWith deletes obj with policy, again if the server failed over
// (the balancer's connection to a killed server), until it is acknowledged
// or found gone after a failed attempt.
func deleteWith(t testing.TB, f *widgetFixture, obj client.Object, policy metav1.DeletionPropagation) {
	t.Helper()
	attempts := 0
	err := wait.PollUntilContextTimeout(t.Context(), pollInterval, operatorTimeout, true, func(ctx context.Context) (bool, error) {
		attempts++
		err := f.cl.Delete(ctx, obj, client.PropagationPolicy(policy))
		switch {
		case failover(err):
			return false, nil
		case attempts > 1 && apierrors.IsNotFound(err):
			return true, nil
		}
		return true, err
	})
	if err != nil {
		t.Fatalf("delete %T %s (%s): %v", obj, obj.GetName(), policy, err)
	}
}
