package interop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/cache"
	"github.com/listwatch/listwatch/internal/testwait"
)

// The informer benchmark: the parent starts the binary and fills it with
// ConfigMaps; each informer then runs in a child process of its own (this
// test binary, re-executed into TestInformerBenchChild), so that its peak
// heap is its own. A child syncs, reports, and counts the updates the
// parent then writes (one per object, so that no informer may coalesce
// them) to measure the CPU each event costs.
const (
	// benchObjectsEnv sets BenchmarkInformerSync's object count (default
	// benchFullObjects); benchUpdatesEnv its update count (default
	// benchFullUpdates, at most the object count).
	benchObjectsEnv  = "LISTWATCH_INFORMER_BENCH_OBJECTS"
	benchUpdatesEnv  = "LISTWATCH_INFORMER_BENCH_UPDATES"
	benchFullObjects = 50000 // issue 5's size
	benchFullUpdates = 10000
	// benchSmokeObjects is TestInformerBenchSmoke's size: enough to run
	// every path of the benchmark, under the race detector, in seconds.
	benchSmokeObjects = 300

	benchValueSize = 1024 // bytes of data per ConfigMap
	benchNamespace = "default"
	benchWriters   = 16                     // concurrent writers filling and updating
	benchSample    = time.Millisecond       // heap sampling period
	benchDeadline  = 10 * time.Minute       // for a child's sync or its updates
	benchMarker    = "informer-bench: "     // prefixes the child's reports on stdout
	benchSynced    = benchMarker + "synced" // the child's "write the updates now"

	// The child's environment.
	benchChildEnv   = "LISTWATCH_INFORMER_BENCH_CHILD" // the informer kind
	benchURLEnv     = "LISTWATCH_INFORMER_BENCH_URL"
	benchCountEnv   = "LISTWATCH_INFORMER_BENCH_COUNT" // objects to expect
	benchPendingEnv = "LISTWATCH_INFORMER_BENCH_PENDING"
	// benchProfileEnv names a directory where each child writes the CPU
	// profile of its sync (KIND.cpu.pprof) and the heap profile after it
	// (KIND.heap.pprof, with alloc_space).
	benchProfileEnv = "LISTWATCH_INFORMER_BENCH_PROFILE"
	// benchKindsEnv, a comma-separated list of kinds, runs only those.
	benchKindsEnv = "LISTWATCH_INFORMER_BENCH_KINDS"
	// benchBaselineEnv names another build of this test binary (go test
	// -c at an earlier commit): its informers run as the kinds
	// "listwatch-baseline" and "listwatch-watchlist-baseline", against the
	// same server in the same run, for before/after figures.
	benchBaselineEnv = "LISTWATCH_INFORMER_BENCH_BASELINE"
	baselineSuffix   = "-baseline"
)

// benchKind is one informer under test.
type benchKind struct {
	name  string
	start func(url string, watchList bool, updates *atomic.Int64) (*benchInformer, error)
	// watchList: load the state with a streaming list instead of LIST.
	watchList bool
	// binary, when set, runs the child from another test binary (the
	// baseline), as the kind of the name without baselineSuffix.
	binary string
}

// selectedKinds are the kinds a run measures: benchKinds, each of ours
// preceded by its baseline when benchBaselineEnv is set, filtered by
// benchKindsEnv.
func selectedKinds(tb testing.TB) []benchKind {
	baseline := os.Getenv(benchBaselineEnv)
	var only []string
	if v := os.Getenv(benchKindsEnv); v != "" {
		only = strings.Split(v, ",")
	}
	var kinds []benchKind
	add := func(k benchKind) {
		if only == nil || slices.Contains(only, k.name) {
			kinds = append(kinds, k)
		}
	}
	for _, k := range benchKinds {
		if baseline != "" && (k.name == "listwatch" || k.name == "listwatch-watchlist") { // kinds every build has
			b := k
			b.name, b.binary = k.name+baselineSuffix, baseline
			add(b)
		}
		add(k)
	}
	if len(kinds) == 0 {
		tb.Fatalf("%s=%q selects no informer kind", benchKindsEnv, os.Getenv(benchKindsEnv))
	}
	return kinds
}

// benchKinds: ours with its default (LIST) and with the streaming list;
// client-go with its default (streaming list, since 1.35) and with LIST.
var benchKinds = []benchKind{
	{name: "listwatch", start: startOurInformer},
	{name: "listwatch-json", start: startOurJSONInformer},
	{name: "listwatch-watchlist", start: startOurInformer, watchList: true},
	{name: "client-go", start: startClientGoInformer, watchList: true},
	{name: "client-go-list", start: startClientGoInformer},
}

// benchResult is what a child measures.
type benchResult struct {
	Kind          string
	Objects       int
	Sync          time.Duration // from making the informer to HasSynced
	SyncCPU       time.Duration // the process's CPU during the sync
	PeakHeap      uint64        // bytes of heap objects, sampled every benchSample during the sync
	LiveHeap      uint64        // bytes of heap objects after the sync and a GC
	Updates       int
	UpdateWall    time.Duration // from "synced" to the last update seen (bound by the server's write rate)
	UpdateCPU     time.Duration // the process's CPU meanwhile
	ProcessMaxRSS int64         // bytes, the child's getrusage maxrss
}

// BenchmarkInformerSync measures the initial sync and the per-event cost
// of our informer and client-go's on the same server, in one run:
//
//	cd test/interop && go test -run '^$' -bench InformerSync -benchtime 1x -timeout 30m
//
// The metrics per kind are the sync time, the peak and the retained heap,
// and CPU per update event; the log compares them with issue 5's targets.
func BenchmarkInformerSync(b *testing.B) {
	n := envInt(b, benchObjectsEnv, benchFullObjects)
	m := min(n, envInt(b, benchUpdatesEnv, benchFullUpdates))
	kinds := selectedKinds(b)
	url := startBenchServer(b, n)
	results := map[string][]benchResult{}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			var sum benchResult
			for b.Loop() {
				r := runBenchChild(b, k, url, n, m)
				results[k.name] = append(results[k.name], r)
				sum = addResults(sum, r)
			}
			reportBench(b, sum, b.N)
		})
	}
	b.Log("\n" + benchSummary(kinds, results))
}

// TestInformerBenchSmoke runs the benchmark's machinery on a few objects,
// checking what it reports but no timing.
func TestInformerBenchSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the binary and four child processes")
	}
	kinds := selectedKinds(t)
	url := startBenchServer(t, benchSmokeObjects)
	results := map[string][]benchResult{}
	for _, k := range kinds {
		r := runBenchChild(t, k, url, benchSmokeObjects, benchSmokeObjects)
		if r.Objects != benchSmokeObjects || r.Updates != benchSmokeObjects || r.PeakHeap == 0 || r.LiveHeap == 0 {
			t.Errorf("%s: %+v", k.name, r)
		}
		results[k.name] = append(results[k.name], r)
	}
	t.Log("\n" + benchSummary(kinds, results))
}

func envInt(tb testing.TB, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive number", name, v)
	}
	return n
}

// startBenchServer starts the binary (without fsync: the benchmark is about
// the informers) and creates n ConfigMaps of benchValueSize bytes.
func startBenchServer(tb testing.TB, n int) string {
	tb.Helper()
	lw := StartListwatch(tb, BuildOnce(tb, "../..", "./cmd/listwatch"), "--data-dir", tb.TempDir(), "--unsafe-no-fsync")
	cms := benchResource(tb, lw.URL)
	value := strings.Repeat("x", benchValueSize)
	start := time.Now()
	err := inParallel(n, func(i int) error {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: benchName(i)}, Data: map[string]string{"value": value}}
		_, err := cms.Create(context.Background(), cm, client.WriteOptions{})
		return err
	})
	if err != nil {
		tb.Fatalf("filling the server: %v", err)
	}
	tb.Logf("created %d ConfigMaps of %d bytes in %v", n, benchValueSize, time.Since(start).Round(time.Millisecond))
	// The server encodes an object in protobuf the first time a list asks
	// for it, then keeps the encoding (as its JSON): list once in each, so
	// that no informer pays for the server's first encoding.
	for _, cfg := range []*client.Config{{Host: lw.URL}, {Host: lw.URL, DisableProtobuf: true}} {
		if _, _, err := benchResourceFor(tb, cfg).ListAll(context.Background(), client.ListOptions{ResourceVersion: "0"}); err != nil {
			tb.Fatalf("warming the server up: %v", err)
		}
	}
	return lw.URL
}

func benchResource(tb testing.TB, url string) *client.Resource[*corev1.ConfigMap] {
	return benchResourceFor(tb, client.ConfigForURL(url))
}

func benchResourceFor(tb testing.TB, cfg *client.Config) *client.Resource[*corev1.ConfigMap] {
	c, err := client.New(cfg)
	if err != nil {
		tb.Fatalf("client: %v", err)
	}
	tb.Cleanup(c.Close)
	return client.NewResource[*corev1.ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, benchNamespace)
}

func benchName(i int) string { return fmt.Sprintf("bench-%06d", i) }

// inParallel calls f(0..n-1) from benchWriters goroutines and returns the
// first error.
func inParallel(n int, f func(i int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, benchWriters)
	for w := range benchWriters {
		wg.Go(func() {
			for i := w; i < n && errs[w] == nil; i += benchWriters {
				if err := f(i); err != nil {
					errs[w] = fmt.Errorf("object %d: %w", i, err)
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// updateObjects patches the first m objects once each, to a value no
// earlier run wrote.
func updateObjects(tb testing.TB, url string, m int) {
	cms := benchResource(tb, url)
	gen := strconv.FormatInt(time.Now().UnixNano(), 10)
	patch := []byte(`{"data":{"gen":"` + gen + `"}}`)
	err := inParallel(m, func(i int) error {
		_, err := cms.Patch(context.Background(), benchName(i), client.MergePatchType, patch, client.PatchOptions{})
		return err
	})
	if err != nil {
		tb.Fatalf("updating: %v", err)
	}
}

// runBenchChild runs kind's informer in a child process against url, which
// holds n objects, writes m updates once it has synced, and returns what it
// measured.
func runBenchChild(tb testing.TB, k benchKind, url string, n, m int) benchResult {
	tb.Helper()
	bin, name := os.Args[0], k.name
	if k.binary != "" {
		bin, name = k.binary, strings.TrimSuffix(k.name, baselineSuffix)
	}
	cmd := exec.Command(bin, "-test.run=^TestInformerBenchChild$", "-test.v")
	cmd.Env = append(os.Environ(), benchChildEnv+"="+name, benchURLEnv+"="+url,
		benchCountEnv+"="+strconv.Itoa(n), benchPendingEnv+"="+strconv.Itoa(m))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatalf("child stdout: %v", err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatalf("starting the child: %v", err)
	}
	r, err := driveChild(tb, out, url, m)
	io.Copy(io.Discard, out)
	if werr := cmd.Wait(); err != nil || werr != nil {
		tb.Fatalf("child %s: %v, %v\n%s", k.name, err, werr, stderr.Bytes())
	}
	return r
}

// driveChild reads the child's reports: at "synced" it writes the updates,
// then it returns the result.
func driveChild(tb testing.TB, out io.Reader, url string, m int) (benchResult, error) {
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == benchSynced:
			updateObjects(tb, url, m)
		case strings.HasPrefix(line, benchMarker):
			var r benchResult
			err := json.Unmarshal([]byte(strings.TrimPrefix(line, benchMarker)), &r)
			return r, err
		}
	}
	return benchResult{}, fmt.Errorf("no result from the child: %v", sc.Err())
}

// TestInformerBenchChild is the child process of the benchmark; it does
// nothing unless runBenchChild started it.
func TestInformerBenchChild(t *testing.T) {
	name := os.Getenv(benchChildEnv)
	if name == "" {
		t.Skip("the informer benchmark's child process")
	}
	var kind *benchKind
	for i := range benchKinds {
		if benchKinds[i].name == name {
			kind = &benchKinds[i]
		}
	}
	if kind == nil {
		t.Fatalf("no informer kind %q", name)
	}
	r, err := measure(*kind, os.Getenv(benchURLEnv), envInt(t, benchCountEnv, 1), envInt(t, benchPendingEnv, 1))
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Println(benchMarker + string(b))
}

// measure runs one informer: its sync (time, CPU, peak heap), the heap it
// keeps, then the m updates the parent writes after "synced".
func measure(k benchKind, url string, n, m int) (benchResult, error) {
	r := benchResult{Kind: k.name}
	var updates atomic.Int64
	runtime.GC()
	stopProfile, err := startProfile(os.Getenv(benchProfileEnv), k.name)
	if err != nil {
		return r, err
	}
	sampler := startHeapSampler()
	cpu0, start := cpuTime(), time.Now()
	inf, err := k.start(url, k.watchList, &updates)
	if err != nil {
		return r, err
	}
	defer inf.stop()
	ctx, cancel := context.WithTimeout(context.Background(), benchDeadline)
	defer cancel()
	if err := inf.waitSynced(ctx); err != nil {
		return r, fmt.Errorf("sync: %w", err)
	}
	r.Sync, r.SyncCPU, r.PeakHeap = time.Since(start), cpuTime()-cpu0, sampler.stop()
	if err := stopProfile(); err != nil {
		return r, err
	}
	if r.Objects = inf.size(); r.Objects != n {
		return r, fmt.Errorf("synced %d objects, want %d", r.Objects, n)
	}
	runtime.GC()
	r.LiveHeap = heapObjects()
	fmt.Println(benchSynced)
	cpu0, start = cpuTime(), time.Now()
	if err := waitCount(ctx, &updates, m); err != nil {
		return r, fmt.Errorf("updates: %w", err)
	}
	r.Updates, r.UpdateWall, r.UpdateCPU = m, time.Since(start), cpuTime()-cpu0
	r.ProcessMaxRSS = maxRSS()
	return r, nil
}

// startProfile starts a CPU profile in dir (nothing when dir is ""); the
// function it returns stops it and writes the heap profile.
func startProfile(dir, kind string) (stop func() error, _ error) {
	if dir == "" {
		return func() error { return nil }, nil
	}
	cpu, err := os.Create(filepath.Join(dir, kind+".cpu.pprof"))
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(cpu); err != nil {
		cpu.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := cpu.Close(); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		return writeHeapProfile(filepath.Join(dir, kind+".heap.pprof"))
	}, nil
}

func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	err = pprof.Lookup("allocs").WriteTo(f, 0)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("heap profile: %w", err)
	}
	return nil
}

// benchInformer is a running informer as the child sees it.
type benchInformer struct {
	waitSynced func(context.Context) error
	size       func() int
	stop       func() // stops it and waits for its goroutines
}

// startOurInformer runs cache.NewInformer over client.Resource with
// k8s.io/api's typed ConfigMap: lists in protobuf, watches in JSON.
func startOurInformer(url string, watchList bool, updates *atomic.Int64) (*benchInformer, error) {
	return startOurs(&client.Config{Host: url}, watchList, updates)
}

// startOurJSONInformer is startOurInformer with lists in JSON too.
func startOurJSONInformer(url string, watchList bool, updates *atomic.Int64) (*benchInformer, error) {
	return startOurs(&client.Config{Host: url, DisableProtobuf: true}, watchList, updates)
}

func startOurs(cfg *client.Config, watchList bool, updates *atomic.Int64) (*benchInformer, error) {
	c, err := client.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	cms := client.NewResource[*corev1.ConfigMap](c, client.GroupVersionResource{Version: "v1", Resource: "configmaps"}, benchNamespace)
	inf := cache.NewInformer(cms, cache.InformerOptions[*corev1.ConfigMap]{Reflector: cache.ReflectorOptions{UseWatchList: watchList}})
	_, err = inf.AddEventHandler(cache.HandlerFuncs[*corev1.ConfigMap]{
		UpdateFunc: func(_, _ *corev1.ConfigMap) { updates.Add(1) },
	})
	if err != nil {
		return nil, fmt.Errorf("handler: %w", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		inf.Run(ctx)
	}()
	return &benchInformer{
		waitSynced: func(ctx context.Context) error {
			if !cache.WaitForCacheSync(ctx, inf) {
				return ctx.Err()
			}
			return nil
		},
		size: inf.Indexer().Len,
		stop: func() { cancel(); <-done; c.Close() },
	}, nil
}

// startClientGoInformer runs client-go's SharedInformer from its typed
// factory, protobuf on the wire as Kubernetes' own components use.
func startClientGoInformer(url string, watchList bool, updates *atomic.Int64) (*benchInformer, error) {
	clientGoGates().on.Store(watchList)
	cs, err := kubernetesClientset(url)
	if err != nil {
		return nil, err
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(benchNamespace))
	inf := factory.Core().V1().ConfigMaps().Informer()
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) { updates.Add(1) },
	})
	if err != nil {
		return nil, fmt.Errorf("handler: %w", err)
	}
	stopCh := make(chan struct{})
	factory.Start(stopCh)
	return &benchInformer{
		// Polled every millisecond: WaitForCacheSync's 100 ms would blur
		// the figure.
		waitSynced: func(ctx context.Context) error { return testwait.Poll(ctx, inf.HasSynced) },
		size:       func() int { return len(inf.GetStore().ListKeys()) },
		stop:       func() { close(stopCh); factory.Shutdown() },
	}, nil
}

func waitCount(ctx context.Context, n *atomic.Int64, want int) error {
	return testwait.Poll(ctx, func() bool { return n.Load() >= int64(want) })
}

// heapSampler records the largest heap seen, every benchSample.
type heapSampler struct {
	done chan struct{}
	peak chan uint64
}

func startHeapSampler() *heapSampler {
	s := &heapSampler{done: make(chan struct{}), peak: make(chan uint64)}
	go s.run()
	return s
}

func (s *heapSampler) run() {
	tick := time.NewTicker(benchSample)
	defer tick.Stop()
	peak := heapObjects()
	for {
		select {
		case <-s.done:
			s.peak <- max(peak, heapObjects())
			return
		case <-tick.C:
			peak = max(peak, heapObjects())
		}
	}
}

// stop ends the sampling and returns the peak.
func (s *heapSampler) stop() uint64 {
	close(s.done)
	return <-s.peak
}

// heapObjects is the bytes of the heap's objects, live or not yet swept
// (runtime.MemStats.HeapAlloc), read without stopping the world.
func heapObjects() uint64 {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

// cpuTime is the process's user and system CPU so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// maxRSS is the process's peak resident set, in bytes.
func maxRSS() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Maxrss * 1024
}

func addResults(a, b benchResult) benchResult {
	a.Kind, a.Objects = b.Kind, b.Objects
	a.Updates += b.Updates
	a.Sync += b.Sync
	a.SyncCPU += b.SyncCPU
	a.PeakHeap += b.PeakHeap
	a.LiveHeap += b.LiveHeap
	a.UpdateWall += b.UpdateWall
	a.UpdateCPU += b.UpdateCPU
	a.ProcessMaxRSS += b.ProcessMaxRSS
	return a
}

// reportBench reports the means of n runs whose sum is s.
func reportBench(b *testing.B, s benchResult, n int) {
	b.ReportMetric(float64(s.Sync.Milliseconds())/float64(n), "sync-ms")
	b.ReportMetric(float64(s.SyncCPU.Milliseconds())/float64(n), "sync-cpu-ms")
	b.ReportMetric(mb(s.PeakHeap)/float64(n), "peak-heap-MB")
	b.ReportMetric(mb(s.LiveHeap)/float64(n), "live-heap-MB")
	b.ReportMetric(float64(s.UpdateCPU.Microseconds())/float64(s.Updates), "cpu-µs/event")
}

// benchSummary is a table of every run and the comparison of our
// informer's default with client-go's against issue 5's targets.
func benchSummary(kinds []benchKind, results map[string][]benchResult) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "%-20s %7s %9s %10s %10s %9s %8s %10s %9s\n",
		"informer", "objects", "sync ms", "sync CPU", "peak heap", "live heap", "max RSS", "events/s", "CPU/event")
	for _, k := range kinds {
		for _, r := range results[k.name] {
			fmt.Fprintf(&sb, "%-20s %7d %9.0f %8.0fms %8.1fMB %7.1fMB %6.0fMB %10.0f %7.1fµs\n",
				k.name, r.Objects, ms(r.Sync), ms(r.SyncCPU), mb(r.PeakHeap), mb(r.LiveHeap), mb(uint64(r.ProcessMaxRSS)),
				float64(r.Updates)/r.UpdateWall.Seconds(), float64(r.UpdateCPU.Microseconds())/float64(r.Updates))
		}
	}
	for _, k := range kinds {
		if base := results[k.name+baselineSuffix]; len(base) > 0 && len(results[k.name]) > 0 {
			fmt.Fprintf(&sb, "%s vs its baseline (medians): sync %.2fx faster, CPU %.2fx less, peak heap %.2f of the baseline's\n",
				k.name, ratio(base, results[k.name], func(r benchResult) float64 { return ms(r.Sync) }),
				ratio(base, results[k.name], func(r benchResult) float64 { return ms(r.SyncCPU) }),
				ratio(results[k.name], base, func(r benchResult) float64 { return mb(r.PeakHeap) }))
		}
	}
	ours, theirs := results["listwatch"], results["client-go"]
	if len(ours) == 0 || len(theirs) == 0 {
		return sb.String()
	}
	oSync, cSync := median(ours, func(r benchResult) float64 { return ms(r.Sync) }), median(theirs, func(r benchResult) float64 { return ms(r.Sync) })
	oCPU, cCPU := median(ours, func(r benchResult) float64 { return ms(r.SyncCPU) }), median(theirs, func(r benchResult) float64 { return ms(r.SyncCPU) })
	oHeap, cHeap := median(ours, func(r benchResult) float64 { return mb(r.PeakHeap) }), median(theirs, func(r benchResult) float64 { return mb(r.PeakHeap) })
	fmt.Fprintf(&sb, "listwatch vs client-go (defaults, medians): sync %.2fx faster (target >= 2; CPU %.2fx less), peak heap %.2f of client-go's (target <= 0.5); "+
		"listwatch sync %.0f ms (target <= 400 at 50,000), peak heap %.1f MB (target <= 130)\n",
		cSync/oSync, cCPU/oCPU, oHeap/cHeap, oSync, oHeap)
	return sb.String()
}

// ratio is the median of f over a divided by its median over b.
func ratio(a, b []benchResult, f func(benchResult) float64) float64 {
	return median(a, f) / median(b, f)
}

// median is the median of f over rs (the upper one of an even count).
func median(rs []benchResult, f func(benchResult) float64) float64 {
	vs := make([]float64, len(rs))
	for i, r := range rs {
		vs[i] = f(r)
	}
	slices.Sort(vs)
	return vs[len(vs)/2]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// mb is b in megabytes (10^6), the unit of issue 5's targets.
func mb(b uint64) float64 { return float64(b) / 1e6 }
