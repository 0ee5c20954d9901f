package interop

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/internal/testwait"
)

// Sizes of the random workload of the convergence tests: bounded, so that
// a run under the race detector on a loaded machine stays short.
const (
	convergeNames   = 16 // keys the writers pick from
	convergeWriters = 3  // concurrent writers
	convergeOps     = 50 // operations per writer
	convergeInitial = 8  // objects created before the informer starts
	convergeTimeout = 60 * time.Second
)

const mediaProtobuf = "application/vnd.kubernetes.protobuf"

// clientGoGates replaces client-go's feature gates (once per process) so
// that the tests can switch WatchListClient, which a Reflector reads when it
// is made; every other feature keeps its default.
var clientGoGates = sync.OnceValue(func() *watchListGate {
	g := &watchListGate{base: clientfeatures.FeatureGates()}
	clientfeatures.ReplaceFeatureGates(g)
	return g
})

type watchListGate struct {
	base clientfeatures.Gates
	on   atomic.Bool
}

func (g *watchListGate) Enabled(f clientfeatures.Feature) bool {
	if f == clientfeatures.WatchListClient {
		return g.on.Load()
	}
	return g.base.Enabled(f)
}

// setWatchList switches client-go's WatchListClient feature for the
// informers t makes. Tests that use it must not run in parallel.
func setWatchList(t *testing.T, on bool) {
	g := clientGoGates()
	prev := g.on.Swap(on)
	t.Cleanup(func() { g.on.Store(prev) })
}

// watchListModes are the two ways client-go loads an informer's state.
var watchListModes = []struct {
	name string
	on   bool
}{{"WatchList", true}, {"ListWatch", false}}

// TestClientGoSharedInformer runs client-go's typed ConfigMap informer
// (protobuf) against the real binary under concurrent random writes, with
// and without the streaming list, and checks that its store and its
// handlers converge on a fresh list.
func TestClientGoSharedInformer(t *testing.T) {
	bin := listwatchBin(t)
	for _, mode := range watchListModes {
		t.Run(mode.name, func(t *testing.T) {
			setWatchList(t, mode.on)
			lw := StartListwatch(t, bin, "--data-dir", t.TempDir(), "--unsafe-no-fsync")
			proxy, counts := startCountingProxy(t, lw.URL, "/configmaps")
			direct := typedClientset(t, lw.URL)
			viaProxy := typedClientset(t, proxy.URL)
			w := configMapWorkload{cms: direct.CoreV1().ConfigMaps("default")}

			factory := informers.NewSharedInformerFactoryWithOptions(viaProxy, 0, informers.WithNamespace("default"))
			informer := factory.Core().V1().ConfigMaps().Informer()
			runConvergence(t, w, factory, informer)

			c := counts.Counts()
			checkLoadPath(t, mode.on, c)
			if c.Protobuf != c.Lists+c.Watches+c.StreamingLists {
				t.Errorf("%d of %d list and watch responses in protobuf, want all: %+v", c.Protobuf, c.Lists+c.Watches+c.StreamingLists, c)
			}
		})
	}
}

// checkLoadPath asserts that the informer loaded its state with a
// streaming list, and no LIST, when WatchListClient is on, and with LIST
// and never a streaming list when it is off.
func checkLoadPath(t *testing.T, watchList bool, c requestCounts) {
	t.Helper()
	t.Logf("requests on the collection: %+v", c)
	switch {
	case watchList && (c.StreamingLists == 0 || c.Lists != 0):
		t.Errorf("WatchListClient on: want streaming lists and no LIST, got %+v", c)
	case !watchList && (c.StreamingLists != 0 || c.Lists == 0):
		t.Errorf("WatchListClient off: want LIST and no streaming list, got %+v", c)
	}
}

// typedClientset is client-go's clientset for url, speaking protobuf as
// Kubernetes' own components do.
func typedClientset(t testing.TB, url string) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetesClientset(url)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// kubernetesClientset is client-go's clientset for url in protobuf, with
// no client-side rate limit.
func kubernetesClientset(url string) (*kubernetes.Clientset, error) {
	cs, err := kubernetes.NewForConfig(&rest.Config{Host: url, ContentConfig: rest.ContentConfig{ContentType: mediaProtobuf}, QPS: -1})
	if err != nil {
		return nil, fmt.Errorf("clientset for %s: %w", url, err)
	}
	return cs, nil
}

// workload writes the objects of one resource and lists them.
type workload interface {
	create(ctx context.Context, name string, gen int) error
	update(ctx context.Context, name string, gen int) error
	delete(ctx context.Context, name string) error
	// list returns every object's key and resourceVersion, read consistently.
	list(ctx context.Context) (map[string]string, error)
}

// informerFactory is what client-go's typed and dynamic factories share.
type informerFactory interface {
	Start(stop <-chan struct{})
	Shutdown()
}

// runConvergence creates a few objects, then starts the informer while
// several goroutines write at random (during its initial load and after),
// and checks that the informer's store and
// its handler's view end equal to a fresh list, and that no handler saw a
// key's resourceVersion go back.
func runConvergence(t *testing.T, w workload, factory informerFactory, informer toolscache.SharedIndexInformer) {
	ctx := t.Context()
	for i := range convergeInitial {
		if err := w.create(ctx, objName(i), 0); err != nil {
			t.Fatalf("initial create: %v", err)
		}
	}
	h := newHandlerView()
	if _, err := informer.AddEventHandler(h); err != nil {
		t.Fatalf("AddEventHandler: %v", err)
	}
	writes := make(chan struct{})
	go func() {
		defer close(writes)
		writeAtRandom(t, w)
	}()
	stop := make(chan struct{})
	factory.Start(stop)
	defer factory.Shutdown()
	defer close(stop)
	syncCtx, cancel := context.WithTimeout(ctx, convergeTimeout)
	defer cancel()
	synced := toolscache.WaitForCacheSync(syncCtx.Done(), informer.HasSynced)
	<-writes
	if !synced {
		t.Fatal("informer did not sync")
	}
	want, err := w.list(ctx)
	if err != nil {
		t.Fatalf("fresh list: %v", err)
	}
	if diff := waitConverged(want, func() map[string]string { return storeView(informer.GetStore()) }); diff != "" {
		t.Errorf("informer store vs fresh list (-want +got):\n%s", diff)
	}
	if diff := waitConverged(want, h.view); diff != "" {
		t.Errorf("handler's view vs fresh list (-want +got):\n%s", diff)
	}
	for _, e := range h.errors() {
		t.Error(e)
	}
}

func objName(i int) string { return "obj-" + strconv.Itoa(i) }

// writeAtRandom creates, updates and deletes objects at random from
// convergeWriters goroutines. Conflicts, absent and existing objects are
// expected outcomes of the race between writers, not failures.
func writeAtRandom(t *testing.T, w workload) {
	var wg sync.WaitGroup
	var applied atomic.Int64
	for writer := range convergeWriters {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(writer), 5))
			for op := range convergeOps {
				ok, err := randomWrite(t.Context(), w, rng, op)
				if err != nil {
					t.Errorf("writer %d: %v", writer, err)
					return
				}
				if ok {
					applied.Add(1)
				}
			}
		})
	}
	wg.Wait()
	t.Logf("%d of %d random writes applied", applied.Load(), convergeWriters*convergeOps)
	if applied.Load() == 0 {
		t.Error("no random write was applied")
	}
}

// randomWrite creates, updates or deletes a random object and says whether
// the server applied it.
func randomWrite(ctx context.Context, w workload, rng *rand.Rand, gen int) (bool, error) {
	name := objName(rng.IntN(convergeNames))
	var op string
	var err error
	switch rng.IntN(3) {
	case 0:
		op, err = "create", w.create(ctx, name, gen)
	case 1:
		op, err = "update", w.update(ctx, name, gen)
	default:
		op, err = "delete", w.delete(ctx, name)
	}
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsAlreadyExists(err) || apierrors.IsConflict(err) {
		return err == nil, nil
	}
	return false, fmt.Errorf("%s %s: %w", op, name, err)
}

// waitConverged polls got until it equals want or convergeTimeout passes,
// and returns the last difference.
func waitConverged(want map[string]string, got func() map[string]string) string {
	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout)
	defer cancel()
	var diff string
	_ = testwait.Poll(ctx, func() bool { diff = cmp.Diff(want, got()); return diff == "" })
	return diff
}

// storeView is the store's key -> resourceVersion.
func storeView(s toolscache.Store) map[string]string {
	out := map[string]string{}
	for _, obj := range s.List() {
		if m, err := meta.Accessor(obj); err == nil {
			out[m.GetNamespace()+"/"+m.GetName()] = m.GetResourceVersion()
		}
	}
	return out
}

// handlerView is an event handler that keeps what its notifications say
// each key's state is, and records any notification that goes back in
// resourceVersion or cannot be read.
type handlerView struct {
	mu   sync.Mutex
	rv   map[string]string // key -> resourceVersion of the last add or update
	last map[string]int64  // key -> highest resourceVersion notified
	errs []string
}

var _ toolscache.ResourceEventHandler = (*handlerView)(nil)

func newHandlerView() *handlerView {
	return &handlerView{rv: map[string]string{}, last: map[string]int64{}}
}

func (h *handlerView) OnAdd(obj any, _ bool) { h.note("add", obj, true) }

func (h *handlerView) OnUpdate(_, obj any) { h.note("update", obj, true) }

func (h *handlerView) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = tomb.Obj
	}
	h.note("delete", obj, false)
}

func (h *handlerView) note(what string, obj any, present bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	m, err := meta.Accessor(obj)
	if err != nil {
		h.errs = append(h.errs, fmt.Sprintf("%s of a %T: %v", what, obj, err))
		return
	}
	key := m.GetNamespace() + "/" + m.GetName()
	rv, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil || rv < h.last[key] {
		h.errs = append(h.errs, fmt.Sprintf("%s of %s at resourceVersion %q after %d", what, key, m.GetResourceVersion(), h.last[key]))
	}
	h.last[key] = max(h.last[key], rv)
	if present {
		h.rv[key] = m.GetResourceVersion()
	} else {
		delete(h.rv, key)
	}
}

func (h *handlerView) view() map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]string, len(h.rv))
	for k, v := range h.rv {
		out[k] = v
	}
	return out
}

func (h *handlerView) errors() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.errs...)
}

// configMapWorkload writes ConfigMaps with client-go's typed client.
type configMapWorkload struct {
	cms interface {
		Create(context.Context, *corev1.ConfigMap, metav1.CreateOptions) (*corev1.ConfigMap, error)
		Get(context.Context, string, metav1.GetOptions) (*corev1.ConfigMap, error)
		Update(context.Context, *corev1.ConfigMap, metav1.UpdateOptions) (*corev1.ConfigMap, error)
		Delete(context.Context, string, metav1.DeleteOptions) error
		List(context.Context, metav1.ListOptions) (*corev1.ConfigMapList, error)
	}
}

func (w configMapWorkload) create(ctx context.Context, name string, gen int) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"gen": strconv.Itoa(gen)}}
	_, err := w.cms.Create(ctx, cm, metav1.CreateOptions{})
	return err
}

func (w configMapWorkload) update(ctx context.Context, name string, gen int) error {
	cm, err := w.cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	cm.Data = map[string]string{"gen": strconv.Itoa(gen)}
	_, err = w.cms.Update(ctx, cm, metav1.UpdateOptions{})
	return err
}

func (w configMapWorkload) delete(ctx context.Context, name string) error {
	return w.cms.Delete(ctx, name, metav1.DeleteOptions{})
}

func (w configMapWorkload) list(ctx context.Context) (map[string]string, error) {
	l, err := w.cms.List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, cm := range l.Items {
		out[cm.Namespace+"/"+cm.Name] = cm.ResourceVersion
	}
	return out, nil
}
