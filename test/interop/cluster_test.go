package interop

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/internal/testwait"
)

// Sizes of the failure run: a few hundred writes, so that it takes seconds
// under the race detector on a loaded machine.
const (
	failWriters = 4 // concurrent writers, each writing objects of its own
	failObjects = 4 // objects per writer and resource
	failRounds  = 8 // writes per object: a create, then updates
	failWrites  = failWriters * failObjects * 2 * failRounds
	// failRetry is the pause before a write that failed is tried again.
	failRetry   = 20 * time.Millisecond
	failTimeout = 2 * time.Minute
)

// Where the run's objects are in etcd (the default --etcd-prefix).
const (
	configMapKeys = "/listwatch/registry/core/configmaps/"
	widgetKeys    = "/listwatch/registry/interop.example.com/widgets/"
)

// TestClusterSurvivesFailures writes ConfigMaps and custom resources through
// a balancer in front of two servers on a three-member etcd cluster, with a
// typed and a dynamic client-go informer watching, and in the middle kills
// the etcd leader and then the server serving the informers' watches. It
// checks that no acknowledged write is lost, that the informers converge
// and resume their watches on the other server without a relist (unless a
// 410 forced one) and see exactly etcd's history of every object, and that
// a server started afterwards serves the same state.
func TestClusterSurvivesFailures(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster and three servers")
	}
	ctx, cancel := context.WithTimeout(t.Context(), failTimeout)
	defer cancel()
	cfg, c := StartCluster(t, listwatchBin(t))
	first, second := hostPort(t, c.Servers[0].URL), hostPort(t, c.Servers[1].URL)
	// The informers connect while only the first server is behind the
	// balancer, so that the server killed is the one serving their watches.
	c.Balancer.SetBackends(first)
	dc := dynamicClient(t, cfg.Host)
	defineWidgets(t, dc)
	waitServed(t, c.Servers[1].URL+"/apis/interop.example.com/v1/namespaces/default/widgets")
	cs := typedClientset(t, cfg.Host)

	typedLW := &countingLW{lw: toolscache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "configmaps", "default", fields.Everything())}
	widgets := dc.Resource(widgetGVR).Namespace("default")
	dynamicLW := listOnlyLW{&countingLW{lw: &toolscache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			return widgets.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return widgets.Watch(ctx, o)
		},
	}}}
	watched := []struct {
		name     string
		lw       *countingLW
		informer toolscache.SharedIndexInformer
		history  *historyHandler
		keys     string // etcd prefix of its objects
	}{
		{"typed", typedLW, toolscache.NewSharedIndexInformer(typedLW, &corev1.ConfigMap{}, 0, nil), newHistoryHandler(), configMapKeys},
		{"dynamic", dynamicLW.countingLW, toolscache.NewSharedIndexInformer(dynamicLW, &unstructured.Unstructured{}, 0, nil), newHistoryHandler(), widgetKeys},
	}
	var informers sync.WaitGroup
	informerCtx, stopInformers := context.WithCancel(ctx)
	defer func() { stopInformers(); informers.Wait() }()
	for _, w := range watched {
		if _, err := w.informer.AddEventHandler(w.history); err != nil {
			t.Fatal(err)
		}
		informers.Go(func() { w.informer.RunWithContext(informerCtx) })
		if !toolscache.WaitForCacheSync(ctx.Done(), w.informer.HasSynced) {
			t.Fatalf("%s informer did not sync", w.name)
		}
	}
	c.Balancer.SetBackends(first, second)

	log := &ackLog{changed: make(chan struct{})}
	var writers sync.WaitGroup
	errs := make(chan error, failWriters)
	for w := range failWriters {
		writers.Go(func() {
			if err := writeObjects(ctx, w, log, cs.CoreV1().ConfigMaps("default"), widgets); err != nil {
				errs <- fmt.Errorf("writer %d: %w", w, err)
				cancel()
			}
		})
	}

	log.waitFor(ctx, failWrites/3)
	etcdKilled := time.Now()
	leader := c.Etcd.KillLeader(t)
	t.Logf("killed etcd member %d (the leader) after %d writes", leader, log.count())

	log.waitFor(ctx, 2*failWrites/3)
	watchesBefore := []int{typedLW.counts().watches, dynamicLW.counts().watches}
	serverKilled := time.Now()
	c.KillServer(0)
	t.Logf("killed the informers' server after %d writes", log.count())

	writers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	t.Logf("%d writes acknowledged; retried: %v", log.count(), log.retries())
	t.Logf("every writer had a write acknowledged %v after the etcd leader's death, %v after the server's",
		log.stall(etcdKilled).Round(time.Millisecond), log.stall(serverKilled).Round(time.Millisecond))

	want := map[string]map[string]string{
		configMapKeys: listed(t)(cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})),
		widgetKeys:    listed(t)(widgets.List(ctx, metav1.ListOptions{})),
	}
	checkAcknowledged(t, log, want)
	// The member killed rejoins and catches up: the history is read from
	// it alone.
	c.Etcd.Restart(t, leader)
	history := etcdHistory(t, []string{c.Etcd.Endpoint(leader)})
	for i, w := range watched {
		if diff := waitConverged(want[w.keys], func() map[string]string { return stateView(w.informer.GetStore()) }); diff != "" {
			t.Errorf("%s informer's store vs a fresh list (-want +got):\n%s", w.name, diff)
		}
		n := w.lw.counts()
		t.Logf("%s informer: %+v; after the server's death, watched again in %v, first event in %v", w.name, n,
			w.lw.watchedAfter(serverKilled).Round(time.Millisecond), w.history.firstAfter(serverKilled).Round(time.Millisecond))
		if n.loads() != 1+n.expired {
			t.Errorf("%s informer loaded its state %d times with %d 410s, want once more than 410s", w.name, n.loads(), n.expired)
		}
		if n.watches <= watchesBefore[i] {
			t.Errorf("%s informer did not watch again after its server died: %d watches before, %d after", w.name, watchesBefore[i], n.watches)
		}
		checkHistory(t, w.name, history[w.keys], w.history.view(), n.expired > 0)
	}

	third := c.StartServer()
	for _, rv := range []string{"", "0"} {
		thirdCS, thirdDC := typedClientset(t, third.URL), dynamicClient(t, third.URL)
		opts := metav1.ListOptions{ResourceVersion: rv}
		got := map[string]map[string]string{
			configMapKeys: listed(t)(thirdCS.CoreV1().ConfigMaps("default").List(ctx, opts)),
			widgetKeys:    listed(t)(thirdDC.Resource(widgetGVR).Namespace("default").List(ctx, opts)),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("a server started afterwards lists (resourceVersion %q) (-want +got):\n%s", rv, diff)
		}
	}
}

// writeObjects is one writer: failRounds times, it writes each of its
// objects of both resources (created, then updated), trying each write
// again until it is acknowledged.
func writeObjects(ctx context.Context, w int, log *ackLog, cms configMapWriter, widgets dynamic.ResourceInterface) error {
	for round := range failRounds {
		for j := range failObjects {
			name := fmt.Sprintf("w%d-%d", w, j)
			for _, res := range []struct {
				keys  string
				write func(context.Context) (string, error)
			}{
				{configMapKeys, func(ctx context.Context) (string, error) { return writeConfigMap(ctx, cms, name, round) }},
				{widgetKeys, func(ctx context.Context) (string, error) { return writeWidget(ctx, widgets, name, round) }},
			} {
				if err := log.retry(ctx, res.keys+"default/"+name, round, res.write); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

type configMapWriter interface {
	Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
	Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
	Update(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error)
}

// writeConfigMap creates the ConfigMap at gen 0, else reads it and updates
// it to gen (compare and swap on its resourceVersion), and returns the
// resourceVersion of the write.
func writeConfigMap(ctx context.Context, cms configMapWriter, name string, gen int) (string, error) {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	var err error
	if gen > 0 {
		if cm, err = cms.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", err
		}
	}
	cm.Data = map[string]string{"gen": strconv.Itoa(gen)}
	if gen == 0 {
		cm, err = cms.Create(ctx, cm, metav1.CreateOptions{})
	} else {
		cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if err != nil {
		return "", err
	}
	return cm.ResourceVersion, nil
}

// writeWidget is writeConfigMap for a widget, whose gen is spec.gen.
func writeWidget(ctx context.Context, widgets dynamic.ResourceInterface, name string, gen int) (string, error) {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetGVR.GroupVersion().String(), "kind": "Widget", "metadata": map[string]any{"name": name},
	}}
	var err error
	if gen > 0 {
		if obj, err = widgets.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return "", err
		}
	}
	if err := unstructured.SetNestedField(obj.Object, int64(gen), "spec", "gen"); err != nil {
		return "", err
	}
	if gen == 0 {
		obj, err = widgets.Create(ctx, obj, metav1.CreateOptions{})
	} else {
		obj, err = widgets.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return "", err
	}
	return obj.GetResourceVersion(), nil
}

// ack is an acknowledged write: the object (etcd key), the gen written and
// the resourceVersion the server answered.
type ack struct {
	key string
	gen int
	rv  string
	at  time.Time
}

// ackLog records the acknowledged writes and counts the failed attempts.
type ackLog struct {
	mu sync.Mutex
	// guarded by mu:
	acks    []ack
	failed  map[string]int // attempts failed, by error
	changed chan struct{}  // closed and replaced at each ack
}

// retry tries write until the server acknowledges it. A write that failed
// for a reason a failover explains (the connection, or the server's
// storage, failed) may or may not have been applied: it is tried again and
// never counted as written. A create tried again that finds its object is
// such a write: it is done but not acknowledged. A conflict means the read
// before an update was stale or an earlier attempt was applied: read again.
func (l *ackLog) retry(ctx context.Context, key string, gen int, write func(context.Context) (string, error)) error {
	for attempt := 0; ; attempt++ {
		rv, err := write(ctx)
		switch {
		case err == nil:
			l.add(ack{key: key, gen: gen, rv: rv, at: time.Now()})
			return nil
		case attempt > 0 && apierrors.IsAlreadyExists(err):
			return nil
		case failover(err), apierrors.IsConflict(err):
			l.fail(err)
		default:
			return fmt.Errorf("write %s gen %d: %w", key, gen, err)
		}
		select {
		case <-time.After(failRetry):
		case <-ctx.Done():
			return fmt.Errorf("write %s gen %d: %w (last error: %v)", key, gen, ctx.Err(), err)
		}
	}
}

// failover says whether err is one that a server's or an etcd member's
// death explains.
func failover(err error) bool {
	return utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsProbableEOF(err) ||
		errors.Is(err, io.ErrUnexpectedEOF) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err)
}

func (l *ackLog) add(a ack) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.acks = append(l.acks, a)
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *ackLog) fail(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failed == nil {
		l.failed = map[string]int{}
	}
	msg := err.Error()
	if len(msg) > 120 {
		msg = msg[:120]
	}
	l.failed[msg]++
}

func (l *ackLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acks)
}

func (l *ackLog) retries() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.failed)
}

// waitFor waits until n writes are acknowledged or ctx ends.
func (l *ackLog) waitFor(ctx context.Context, n int) {
	for {
		l.mu.Lock()
		done, changed := len(l.acks) >= n, l.changed
		l.mu.Unlock()
		if done {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
}

// stall is how long after the moment at every writer had had a write
// acknowledged.
func (l *ackLog) stall(at time.Time) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := map[string]time.Time{} // by writer
	for _, a := range l.acks {
		w, _, _ := strings.Cut(a.key[strings.LastIndex(a.key, "/")+1:], "-")
		if _, ok := first[w]; !ok && a.at.After(at) {
			first[w] = a.at
		}
	}
	var longest time.Duration
	for _, t := range first {
		longest = max(longest, t.Sub(at))
	}
	return longest
}

// last returns each object's last acknowledged write.
func (l *ackLog) last() map[string]ack {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]ack{}
	for _, a := range l.acks {
		out[a.key] = a
	}
	return out
}

// checkAcknowledged checks that every object ends as its last acknowledged
// write left it (every write of the run was tried until acknowledged), at
// that write's resourceVersion and gen.
func checkAcknowledged(t *testing.T, log *ackLog, final map[string]map[string]string) {
	t.Helper()
	last := log.last()
	if len(last) != failWriters*failObjects*2 {
		t.Errorf("%d objects acknowledged, want %d", len(last), failWriters*failObjects*2)
	}
	for key, a := range last {
		keys := configMapKeys
		if strings.HasPrefix(key, widgetKeys) {
			keys = widgetKeys
		}
		got := final[keys][strings.TrimPrefix(key, keys)]
		if want := a.rv + " gen " + strconv.Itoa(a.gen); got != want {
			t.Errorf("%s is %q at the end, want its last acknowledged write %q", key, got, want)
		}
	}
}

// listed returns a function that gives the states of a list's items by
// namespace/name, failing t if the list failed.
func listed(t *testing.T) func(runtime.Object, error) map[string]string {
	return func(list runtime.Object, err error) map[string]string {
		t.Helper()
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		items, err := meta.ExtractList(list)
		if err != nil {
			t.Fatalf("list: %v", err)
		}
		return states(items)
	}
}

// stateView is what an informer's store holds: states by namespace/name.
func stateView(s toolscache.Store) map[string]string { return states(s.List()) }

func states[T any](objs []T) map[string]string {
	out := map[string]string{}
	for _, obj := range objs {
		k, st := objectState(obj)
		out[k] = st
	}
	return out
}

// objectState is a ConfigMap's or a widget's namespace/name and its state,
// "<resourceVersion> gen <gen>".
func objectState(obj any) (key, state string) {
	var gen string
	switch o := obj.(type) {
	case *corev1.ConfigMap:
		gen = o.Data["gen"]
	case *unstructured.Unstructured:
		g, _, _ := unstructured.NestedInt64(o.Object, "spec", "gen")
		gen = strconv.FormatInt(g, 10)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return fmt.Sprintf("%T", obj), err.Error()
	}
	return m.GetNamespace() + "/" + m.GetName(), m.GetResourceVersion() + " gen " + gen
}

// etcdHistory reads every revision of the run's objects from etcd: the
// ModRevision of each write, by namespace/name, by the keys' prefix.
func etcdHistory(t *testing.T, endpoints []string) map[string]map[string][]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), etcdStartTimeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: etcdStartTimeout, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	now, err := cli.Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatalf("etcd revision: %v", err)
	}
	out := map[string]map[string][]int64{configMapKeys: {}, widgetKeys: {}}
	wch := cli.Watch(ctx, "/listwatch/registry/", clientv3.WithPrefix(), clientv3.WithRev(1))
	// A progress notification at the current revision says every event
	// before it has been sent; etcd sends one only to a watch that has
	// caught up, when asked.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case resp, ok := <-wch:
			if !ok || resp.Err() != nil {
				t.Fatalf("etcd history: %v", resp.Err())
			}
			for _, e := range resp.Events {
				for keys, h := range out {
					if k, ok := strings.CutPrefix(string(e.Kv.Key), keys); ok {
						h[k] = append(h[k], e.Kv.ModRevision)
					}
				}
			}
			if resp.IsProgressNotify() && resp.Header.Revision >= now.Header.Revision {
				return out
			}
		case <-tick.C:
			if err := cli.RequestProgress(ctx); err != nil {
				t.Fatalf("etcd progress: %v", err)
			}
		case <-ctx.Done():
			t.Fatalf("etcd history: %v", ctx.Err())
		}
	}
}

// checkHistory checks what an informer's handler was told of each object
// against etcd's history of it: without a relist, exactly every revision,
// in order, each once (the informer started before the objects existed);
// after a relist, revisions in order ending at the last.
func checkHistory(t *testing.T, name string, etcd, seen map[string][]int64, relisted bool) {
	t.Helper()
	if !relisted {
		if diff := cmp.Diff(etcd, seen); diff != "" {
			t.Errorf("%s informer's notifications vs etcd's history (-want +got):\n%s", name, diff)
		}
		return
	}
	for key, revs := range etcd {
		got := seen[key]
		if !slices.IsSorted(got) || len(got) == 0 || got[len(got)-1] != revs[len(revs)-1] {
			t.Errorf("%s informer's notifications of %s: %v, want revisions in order ending at %d", name, key, got, revs[len(revs)-1])
		}
	}
}

// countingLW wraps a ListWatch, counting how the informer loads its state
// (LIST, or a streaming list: a watch with sendInitialEvents) and watches,
// and the 410s it is answered.
type countingLW struct {
	lw *toolscache.ListWatch
	mu sync.Mutex
	// guarded by mu:
	n       lwCounts
	watched []time.Time // when each watch (not a streaming list) was asked for
}

type lwCounts struct{ lists, streams, watches, expired int }

func (c lwCounts) loads() int { return c.lists + c.streams }

var _ toolscache.ListerWatcherWithContext = (*countingLW)(nil)

func (c *countingLW) List(o metav1.ListOptions) (runtime.Object, error) {
	return c.ListWithContext(context.Background(), o)
}

func (c *countingLW) Watch(o metav1.ListOptions) (watch.Interface, error) {
	return c.WatchWithContext(context.Background(), o)
}

func (c *countingLW) ListWithContext(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	c.count(func(n *lwCounts) { n.lists++ })
	obj, err := c.lw.ListWithContext(ctx, o)
	c.noteExpired(err)
	return obj, err
}

func (c *countingLW) WatchWithContext(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
	if o.SendInitialEvents != nil && *o.SendInitialEvents {
		c.count(func(n *lwCounts) { n.streams++ })
	} else {
		c.count(func(n *lwCounts) { n.watches++ })
		c.mu.Lock()
		c.watched = append(c.watched, time.Now())
		c.mu.Unlock()
	}
	w, err := c.lw.WatchWithContext(ctx, o)
	if err != nil {
		c.noteExpired(err)
		return nil, err
	}
	return watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
		if e.Type == watch.Error {
			c.noteExpired(apierrors.FromObject(e.Object))
		}
		return e, true
	}), nil
}

func (c *countingLW) noteExpired(err error) {
	if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
		c.count(func(n *lwCounts) { n.expired++ })
	}
}

func (c *countingLW) count(f func(*lwCounts)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f(&c.n)
}

// watchedAfter is how long after at the first watch was asked for.
func (c *countingLW) watchedAfter(at time.Time) time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return firstAfter(c.watched, at)
}

func (c *countingLW) counts() lwCounts {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// listOnlyLW tells client-go's reflector to load with LIST rather than a
// streaming list, so that the run has an informer of each kind.
type listOnlyLW struct{ *countingLW }

func (listOnlyLW) IsWatchListSemanticsUnSupported() bool { return true }

// historyHandler records the resourceVersion of every notification of
// each object, in order, and when each came.
type historyHandler struct {
	mu sync.Mutex
	// guarded by mu:
	revs  map[string][]int64
	times []time.Time
}

var _ toolscache.ResourceEventHandler = (*historyHandler)(nil)

func newHistoryHandler() *historyHandler { return &historyHandler{revs: map[string][]int64{}} }

func (h *historyHandler) OnAdd(obj any, _ bool) { h.note(obj) }

func (h *historyHandler) OnUpdate(_, obj any) { h.note(obj) }

func (h *historyHandler) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	h.note(obj)
}

func (h *historyHandler) note(obj any) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	rv, _ := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	h.mu.Lock()
	defer h.mu.Unlock()
	key := m.GetNamespace() + "/" + m.GetName()
	h.revs[key] = append(h.revs[key], rv)
	h.times = append(h.times, time.Now())
}

func (h *historyHandler) view() map[string][]int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string][]int64, len(h.revs))
	for k, v := range h.revs {
		out[k] = slices.Clone(v)
	}
	return out
}

// firstAfter is how long after at the first notification came.
func (h *historyHandler) firstAfter(at time.Time) time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	return firstAfter(h.times, at)
}

// firstAfter is how long after at the first of times (in order) is, or -1.
func firstAfter(times []time.Time, at time.Time) time.Duration {
	for _, t := range times {
		if t.After(at) {
			return t.Sub(at)
		}
	}
	return -1
}

// TestClusterServerStopsGracefully stops, with SIGTERM, the server
// serving a typed informer's watch behind the balancer, as a rolling
// restart does: the server ends its watches at once (new ones during its
// shutdown delay are answered 429, which client-go retries), and the
// informer resumes on the other server without a relist and converges.
func TestClusterServerStopsGracefully(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster and two servers")
	}
	cfg, c := StartCluster(t, listwatchBin(t), "--shutdown-delay-duration", "1s")
	ctx := t.Context()
	c.Balancer.SetBackends(hostPort(t, c.Servers[0].URL))
	cms := typedClientset(t, cfg.Host).CoreV1().ConfigMaps("default")
	lw := &countingLW{lw: toolscache.NewListWatchFromClient(typedClientset(t, cfg.Host).CoreV1().RESTClient(), "configmaps", "default", fields.Everything())}
	informer := toolscache.NewSharedIndexInformer(lw, &corev1.ConfigMap{}, 0, nil)
	informerCtx, stop := context.WithCancel(ctx)
	var running sync.WaitGroup
	defer func() { stop(); running.Wait() }()
	running.Go(func() { informer.RunWithContext(informerCtx) })
	if !toolscache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("informer did not sync")
	}
	c.Balancer.SetBackends(hostPort(t, c.Servers[0].URL), hostPort(t, c.Servers[1].URL))
	create := func(name string) {
		t.Helper()
		if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	create("before")
	// client-go relists after a watch that ends within a second having
	// delivered nothing ("very short watch"): let it deliver one first.
	testwait.Until(t, convergeTimeout, "the informer to hold default/before", func() bool {
		_, ok, _ := informer.GetStore().GetByKey("default/before")
		return ok
	})
	if err := c.Servers[0].Stop(); err != nil {
		t.Fatal(err)
	}
	create("after")
	want := listed(t)(cms.List(ctx, metav1.ListOptions{}))
	if diff := waitConverged(want, func() map[string]string { return stateView(informer.GetStore()) }); diff != "" {
		t.Errorf("informer's store vs a fresh list (-want +got):\n%s", diff)
	}
	n := lw.counts()
	t.Logf("informer: %+v", n)
	if n.loads() != 1+n.expired || n.watches == 0 {
		t.Errorf("informer: %+v, want one load more than 410s, and a watch after it", n)
	}
}

// TestClusterReadsAcrossServers checks that a consistent read (no
// resourceVersion) from one server sees a write acknowledged just before
// by the other, as kube-apiserver's consistent reads from its cache do:
// the other's watch cache must not answer from behind the write.
func TestClusterReadsAcrossServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster and two servers")
	}
	_, c := StartCluster(t, listwatchBin(t))
	writer := typedClientset(t, c.Servers[0].URL).CoreV1().ConfigMaps("default")
	reader := typedClientset(t, c.Servers[1].URL).CoreV1().ConfigMaps("default")
	ctx := t.Context()
	for i := range 50 {
		name := "read-" + strconv.Itoa(i)
		cm, err := writer.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := reader.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get %s from the other server right after its create at %s: %v", name, cm.ResourceVersion, err)
		}
		l, err := reader.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got.ResourceVersion != cm.ResourceVersion || len(l.Items) != i+1 || revision(t, l.ResourceVersion) < revision(t, cm.ResourceVersion) {
			t.Fatalf("the other server, right after a create at %s: get at %s, list of %d at %s, want %d at or after it",
				cm.ResourceVersion, got.ResourceVersion, len(l.Items), l.ResourceVersion, i+1)
		}
	}
}

func revision(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// TestClusterServiceAccountTokens checks that a service account token one
// server issued authenticates on the other: both sign and verify with the
// one key StartCluster gives them (--service-account-signing-key-file).
func TestClusterServiceAccountTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an etcd cluster and two servers")
	}
	tokens := writeFile(t, t.TempDir(), "tokens.csv", `admin,admin,1,"system:masters"`+"\n")
	_, c := StartCluster(t, listwatchBin(t), "--token-auth-file", tokens)
	ctx := t.Context()
	clientset := func(url, token string) *kubernetes.Clientset {
		cs, err := kubernetes.NewForConfig(&rest.Config{Host: url, BearerToken: token, QPS: -1})
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}
	admin := clientset(c.Servers[0].URL, "admin").CoreV1().ServiceAccounts("default")
	if _, err := admin.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "robot"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := admin.CreateToken(ctx, "robot", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("CreateToken: %v", err)
	}
	for i, lw := range c.Servers {
		reviews := clientset(lw.URL, tr.Status.Token).AuthenticationV1().SelfSubjectReviews()
		// The other server knows the account once its watch of the store
		// has brought it.
		testwait.UntilNil(t, convergeTimeout, fmt.Sprintf("server %d to know the account", i), func() error {
			r, err := reviews.Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
			switch {
			case apierrors.IsUnauthorized(err):
				return err
			case err != nil || r.Status.UserInfo.Username != "system:serviceaccount:default:robot":
				t.Fatalf("server %d, SelfSubjectReview with a token server 0 issued: %v %v", i, r, err)
			}
			return nil
		})
	}
}
