package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/internal/cuttest"
	"github.com/listwatch/listwatch/internal/testwait"
)

// The chaos schedule: each cut comes after a random number of writes, up
// to maxWritesBetweenCuts; each wait has waitTimeout.
const (
	cutsPerPhase         = 8
	maxWritesBetweenCuts = 25
	waitTimeout          = 30 * time.Second
	probeTimeout         = 2 * time.Second
)

// compactingFlags make a server compact its history to 250 revisions
// behind the current one, ten times a second: enough to pass a partitioned
// informer's position within a second of writes, and to spare the server's
// own watch of its store, which would relist its watch cache if it fell
// that far behind.
var compactingFlags = []string{"--compaction-interval=100ms", "--compaction-keep-revisions=250", "--compaction-keep-duration=10ms"}

// chaosBackoff retries within a fraction of a second, so that the test
// spends its time on chaos, not on waiting.
var chaosBackoff = cache.Backoff{Initial: 10 * time.Millisecond, Factor: 2, Jitter: 0.5, Cap: 200 * time.Millisecond, ResetAfter: time.Second}

// TestChaos runs an informer through a proxy that cuts its connections,
// across a server restart and a compaction past its resourceVersion, under
// concurrent writes; its cache and its handler must end at the server's
// state, and it must relist once, for the compaction, and never otherwise.
func TestChaos(t *testing.T) {
	for _, tc := range []struct {
		name      string
		streaming bool
	}{{"list", false}, {"streaming list", true}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := newChaos(t, tc.streaming)
			c.phase("cuts", c.cuts)
			c.phase("restart", c.restart)
			c.phase("cuts after restart", c.cuts)
			c.phase("compaction", c.compaction)
			c.phase("convergence", c.converge)
		})
	}
}

// chaos is one run: a server, a proxy in front of it, an informer behind
// the proxy with a recording handler, and writers.
type chaos struct {
	t         *testing.T
	streaming bool // the informer loads its state with streaming lists
	srv       *server
	proxy     *cuttest.Proxy
	direct    *client.Resource[*configMap] // to the server, bypassing the proxy
	inf       *cache.SharedIndexInformer[*configMap]
	rec       *recorder
	writers   *writers
	markers   int // catch-up markers written
}

func newChaos(t *testing.T, streaming bool) *chaos {
	srv := startServer(t)
	c := &chaos{t: t, streaming: streaming, srv: srv, proxy: cuttest.StartProxy(t, srv.addr), rec: newRecorder()}
	c.direct = client.NewResource[*configMap](srv.client(t), configMaps, "default")
	// doomed is deleted while the informer is partitioned, so that only a
	// relist can tell it so; marker tells when the informer has caught up.
	c.create("doomed")
	c.create("marker")
	c.startInformer()
	c.writers = startWriters(t, srv.URL)
	return c
}

func (c *chaos) create(name string) {
	c.t.Helper()
	if _, err := c.direct.Create(context.Background(), newConfigMap(name, nil), client.WriteOptions{}); err != nil {
		c.t.Fatal(err)
	}
}

// startInformer runs the informer through the proxy until the test ends,
// and waits for its first sync.
func (c *chaos) startInformer() {
	opts := cache.ReflectorOptions{
		Name: "chaos", UseWatchList: c.streaming, Backoff: chaosBackoff,
		WatchErrorHandler: func(err error) { c.t.Logf("informer: %v", err) },
	}
	c.inf = runInformer(c.t, c.proxy.Addr, opts, c.rec.handler())
}

// runInformer runs an informer of the default namespace's ConfigMaps
// through addr, with opts and handler, until the test ends, and waits for
// its first sync.
func runInformer(t *testing.T, addr string, opts cache.ReflectorOptions, handler cache.ResourceEventHandler[*configMap]) *cache.SharedIndexInformer[*configMap] {
	t.Helper()
	cl, err := client.New(client.ConfigForURL("http://" + addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	inf := cache.NewInformer(client.NewResource[*configMap](cl, configMaps, "default"), cache.InformerOptions[*configMap]{Reflector: opts})
	reg, err := inf.AddEventHandler(handler)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = inf.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	syncCtx, cancelSync := context.WithTimeout(ctx, waitTimeout)
	defer cancelSync()
	if !cache.WaitForCacheSync(syncCtx, inf, reg) {
		t.Fatalf("informer not synced after %v", waitTimeout)
	}
	return inf
}

// phase runs one step of the run and logs how long it took and the
// reflector's counters after it.
func (c *chaos) phase(name string, step func()) {
	start := time.Now()
	step()
	c.t.Logf("%s: %v, %d writes, %d cuts, reflector %+v", name, time.Since(start).Round(time.Millisecond),
		c.writers.Writes(), c.proxy.Cuts(), c.inf.Reflector().Stats())
}

// cuts cuts the informer's connections at random moments under the writes;
// the informer must resume each time without a relist.
func (c *chaos) cuts() {
	for range cutsPerPhase {
		c.waitWrites(1 + rand.Int64N(maxWritesBetweenCuts))
		waitFor(c.t, "a connection to cut", c.proxy.Cut)
	}
	c.catchUp()
	c.expectRelists(0)
}

// restart restarts the server on the same data and port: the informer
// resumes from its resourceVersion, which bolt's history still holds.
func (c *chaos) restart() {
	c.restartServer()
	c.waitWrites(maxWritesBetweenCuts)
	c.catchUp()
	c.expectRelists(0)
}

// compaction partitions the informer, deletes an object it holds, and
// restarts the server with a policy that compacts its history past the
// informer's resourceVersion (the restart empties the watch cache, which
// would otherwise serve the informer's position from memory). Reconnected,
// the informer gets 410 and must relist exactly once.
func (c *chaos) compaction() {
	c.proxy.Block()
	if err := c.direct.Delete(context.Background(), "doomed", client.DeleteOptions{}); err != nil {
		c.t.Fatal(err)
	}
	c.restartServer(compactingFlags...)
	waitFor(c.t, "history compacted past the informer's resourceVersion", func() bool {
		return c.expired(c.inf.Reflector().LastSyncResourceVersion())
	})
	c.proxy.Unblock()
	c.catchUp()
	c.expectRelists(1)
}

// converge stops the writers and checks that the informer's cache and its
// handler end at the server's state.
func (c *chaos) converge() {
	c.writers.stop()
	if err := c.writers.Err(); err != nil {
		c.t.Errorf("writers: %v", err)
	}
	c.catchUp()
	items, _, err := c.direct.ListAll(context.Background(), client.ListOptions{})
	if err != nil {
		c.t.Fatal(err)
	}
	want := statesOf(items)
	if diff := cmp.Diff(want, statesOf(c.inf.Indexer().List())); diff != "" {
		c.t.Errorf("informer cache against a fresh list (-want +got):\n%s", diff)
	}
	testwait.UntilNil(c.t, waitTimeout, "the handler's final states to be a fresh list's", func() error {
		if diff := cmp.Diff(want, c.rec.final()); diff != "" {
			return fmt.Errorf("(-want +got):\n%s", diff)
		}
		return nil
	})
	if bad := c.rec.broken(); len(bad) > 0 {
		c.t.Errorf("handler sequences broken: %q", bad)
	}
	if unknown := c.rec.deletedUnknown(); !slices.Contains(unknown, "default/doomed") {
		c.t.Errorf("deleted with final state unknown: %q, want default/doomed among them", unknown)
	}
	c.expectRelists(1)
	if st := c.inf.Reflector().Stats(); c.streaming && (st.ListCalls != 0 || st.WatchListFallbacks != 0) {
		c.t.Errorf("streaming lists fell back to LIST: %+v", st)
	}
}

// restartServer stops the server and starts it again on the same data
// directory and port, with args; the writers wait meanwhile.
func (c *chaos) restartServer(args ...string) {
	c.writers.pause()
	defer c.writers.resume()
	c.srv.stop(c.t)
	c.srv.start(c.t, args...)
}

// waitWrites waits until the writers have made n more writes.
func (c *chaos) waitWrites(n int64) {
	target := c.writers.Writes() + n
	waitFor(c.t, "writes", func() bool { return c.writers.Writes() >= target })
}

// catchUp changes the marker object and waits until the informer has the
// change: it then reflects every write before it.
func (c *chaos) catchUp() {
	c.t.Helper()
	c.markers++
	patch := fmt.Appendf(nil, `{"data":{"n":"%d"}}`, c.markers)
	m, err := c.direct.Patch(context.Background(), "marker", client.MergePatchType, patch, client.PatchOptions{})
	if err != nil {
		c.t.Fatalf("writing the marker: %v", err)
	}
	waitFor(c.t, "the informer to catch up", func() bool {
		got, ok := c.inf.Indexer().GetByKey("default/marker")
		return ok && got.ResourceVersion == m.ResourceVersion
	})
}

// expectRelists checks the reflector's relist count.
func (c *chaos) expectRelists(want int64) {
	c.t.Helper()
	if got := c.inf.Reflector().Stats().Relists; got != want {
		c.t.Errorf("relists: %d, want %d (reflector %+v)", got, want, c.inf.Reflector().Stats())
	}
}

// expired reports whether the server answers a watch from rv with 410
// Expired: its history no longer holds rv.
func (c *chaos) expired(rv string) bool {
	ctx, cancel := context.WithTimeout(context.Background(), probeTimeout)
	defer cancel()
	w, err := c.direct.Watch(ctx, client.ListOptions{ResourceVersion: rv})
	if err != nil {
		return client.IsExpired(err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.Events():
		if !ok {
			return client.IsExpired(w.Err())
		}
		return ev.Type == client.Error && client.IsExpired(ev.Err)
	case <-ctx.Done():
		return false
	}
}

// waitFor waits waitTimeout at most for cond, which no event announces.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.Until(t, waitTimeout, what, cond)
}
