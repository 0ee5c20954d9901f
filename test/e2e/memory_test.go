package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/testwait"
)

// 200 watchers that never read and 1,200 writes of
// 0.9 MB pinned 1.1 GB of heap (RSS 2.6 GB), 958 MB of it still held 10
// minutes later, for the watch cache's ring kept 1,024 events whatever
// their size (measured again before the fix: 1,108 MiB of live heap with
// the watchers stalled, 1,072 MiB once they were gone, 2,387 MiB of peak
// anonymous RSS). Now the live heap with the watchers stalled is at most
// the ring's budget, the replays' budget, one object per watcher (a
// stalled watch holds the rest of its last write; see the watchcache
// package's doc) and stalledHeapSlack; once they are gone, the objects,
// the ring's budget and the slack; the anonymous RSS stays under
// stalledRSSBound throughout (measured: 48-83 MiB, 28 MiB and 251-371
// MiB, in 24-49 s on 2 loaded cores).
const (
	stalledWatchers  = 200
	stalledWrites    = 1200
	stalledObjects   = 4         // updated in turn: the live objects stay small
	stalledSize      = 900 << 10 // bytes of each write's data
	stalledRingMiB   = 32        // --watch-cache-budget-mib
	stalledReplayMiB = 32        // --watch-replay-budget-mib
	// stalledHeapSlack: the server's own heap (catalogue, metrics,
	// connections) and the writes in flight with their decoded copies.
	stalledHeapSlack = 64 << 20
	stalledHeapBound = (stalledRingMiB+stalledReplayMiB)<<20 + stalledWatchers*stalledSize + stalledHeapSlack
	// stalledRSSBound: twice the live heap's bound, as GOGC=100 lets the
	// heap grow to twice what it keeps, and the pages the allocator has
	// not returned yet.
	stalledRSSBound = 1 << 30
)

func TestStalledWatchersWithLargeObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 1 GB through the server")
	}
	s := &server{addr: freeAddr(t), dataDir: t.TempDir()}
	s.URL = "http://" + s.addr
	s.start(t, "--profiling", "--watch-cache-budget-mib", strconv.Itoa(stalledRingMiB), "--watch-cache-resource-budget-mib", strconv.Itoa(stalledRingMiB),
		"--watch-replay-budget-mib", strconv.Itoa(stalledReplayMiB))
	t.Cleanup(func() { s.stop(t) })
	const cms = "/api/v1/namespaces/default/configmaps"
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	rv := ""
	for i := range stalledObjects {
		o := putConfigMap(t, ctx, s.URL, "POST", cms, i, 0)
		rv = o.Metadata.ResourceVersion
	}
	var conns []net.Conn
	for range stalledWatchers {
		conns = append(conns, stalledWatch(t, s.addr, cms+"?watch=true&resourceVersion="+rv))
	}
	// One more: the garbage collector's, which reads its events at once.
	waitMetric(t, ctx, s.URL, `apiserver_registered_watchers{group="",kind="ConfigMap",version="v1"}`, stalledWatchers+1)

	peak := &rssPeak{pid: s.cmd.Process.Pid}
	stopSampling := peak.sample(t)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range stalledObjects {
		wg.Go(func() {
			for n := 1; n <= stalledWrites/stalledObjects; n++ {
				putConfigMap(t, ctx, s.URL, "PUT", fmt.Sprintf("%s/big%d", cms, i), i, n)
			}
		})
	}
	wg.Wait()
	stopSampling()
	t.Logf("%d writes of %d KiB with %d stalled watchers in %v; peak RSS (anonymous) %d MiB",
		stalledWrites, stalledSize>>10, stalledWatchers, time.Since(start).Round(time.Millisecond), peak.max>>20)
	if peak.max > stalledRSSBound {
		t.Errorf("peak anonymous RSS %d MiB, want under %d MiB", peak.max>>20, stalledRSSBound>>20)
	}
	ring := metricValue(t, ctx, s.URL, `listwatch_watch_cache_ring_bytes{resource="configmaps"}`)
	evicted := metricValue(t, ctx, s.URL, `listwatch_watch_cache_evicted_events_total{resource="configmaps"}`)
	stalledHeap := heapInuse(t, ctx, s.URL)
	t.Logf("ring: %.0f MiB, %.0f events evicted; live heap with the watchers stalled: %d MiB", ring/(1<<20), evicted, stalledHeap>>20)
	if ring > stalledRingMiB<<20 || evicted == 0 {
		t.Errorf("configmaps' ring holds %.0f bytes and evicted %.0f events; want at most %d bytes, some evicted", ring, evicted, stalledRingMiB<<20)
	}
	used := metricValue(t, ctx, s.URL, "listwatch_watch_cache_budget_used_bytes")
	replayed := metricValue(t, ctx, s.URL, "listwatch_watch_replay_bytes")
	t.Logf("the budgets hold %.1f MiB of rings and %.1f MiB of replayed objects", used/(1<<20), replayed/(1<<20))
	if used <= 0 || used > stalledRingMiB<<20 || replayed > stalledReplayMiB<<20+stalledWatchers*stalledSize {
		t.Errorf("the budgets hold %.0f bytes of rings and %.0f of replays; want some, at most %d, and at most %d", used, replayed, stalledRingMiB<<20, stalledReplayMiB<<20+stalledWatchers*stalledSize)
	}
	if stalledHeap > stalledHeapBound {
		t.Errorf("live heap %d MiB with the watchers stalled, want under %d MiB", stalledHeap>>20, stalledHeapBound>>20)
	}

	for _, c := range conns {
		c.Close()
	}
	waitMetric(t, ctx, s.URL, `apiserver_registered_watchers{group="",kind="ConfigMap",version="v1"}`, 1)
	heap := heapInuse(t, ctx, s.URL)
	t.Logf("live heap once the watchers are gone: %d MiB", heap>>20)
	if bound := int64(stalledRingMiB<<20 + stalledObjects*stalledSize + stalledHeapSlack); heap > bound {
		t.Errorf("live heap %d MiB once the watchers are gone, want under %d MiB", heap>>20, bound>>20)
	}
}

// putConfigMap writes ConfigMap big<i> with stalledSize bytes of data,
// different at each n, and fails the test unless the server accepts it.
func putConfigMap(t *testing.T, ctx context.Context, base, method, path string, i, n int) configMapMeta {
	t.Helper()
	pad := strings.Repeat(strconv.Itoa(n%10), stalledSize)
	body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big%d"},"data":{"pad":%q}}`, i, pad)
	req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return configMapMeta{}
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Errorf("%s %s: %v", method, path, err)
		return configMapMeta{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusCreated {
		t.Errorf("%s %s (write %d): %d %.300s", method, path, n, resp.StatusCode, b)
		return configMapMeta{}
	}
	var o configMapMeta
	if err := json.Unmarshal(b, &o); err != nil {
		t.Error(err)
	}
	return o
}

type configMapMeta struct {
	Metadata struct {
		ResourceVersion string `json:"resourceVersion"`
	} `json:"metadata"`
}

// stalledWatch starts a watch on a raw connection that is never read; it
// is closed when the test ends, if not before.
func stalledWatch(t *testing.T, addr, path string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.(*net.TCPConn).SetReadBuffer(16 << 10)
	if _, err := fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, addr); err != nil {
		t.Fatal(err)
	}
	return c
}

// metricValue returns the value of a series /metrics serves (0 if absent).
func metricValue(t *testing.T, ctx context.Context, base, series string) float64 {
	t.Helper()
	b := get(t, ctx, base+"/metrics")
	for l := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), series+" "); ok {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return f
		}
	}
	return 0
}

// waitMetric waits waitTimeout at most until a series has the value want.
func waitMetric(t *testing.T, ctx context.Context, base, series string, want float64) {
	t.Helper()
	testwait.UntilNil(t, waitTimeout, fmt.Sprintf("%s to be %v", series, want), func() error {
		if got := metricValue(t, ctx, base, series); got != want {
			return fmt.Errorf("%s is %v", series, got)
		}
		return nil
	})
}

var heapInuseLine = regexp.MustCompile(`(?m)^# HeapInuse = (\d+)$`)

// heapInuse returns the server's heap in use right after a collection
// (pprof's heap profile with gc=1, which --profiling serves).
func heapInuse(t *testing.T, ctx context.Context, base string) int64 {
	t.Helper()
	m := heapInuseLine.FindSubmatch(get(t, ctx, base+"/debug/pprof/heap?gc=1&debug=1"))
	if m == nil {
		t.Fatal("no HeapInuse in the heap profile")
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

func get(t *testing.T, ctx context.Context, url string) []byte {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v", url, resp.StatusCode, err)
	}
	return b
}

// rssPeak tracks the largest anonymous RSS (the heap and stacks, not the
// store's mapped file) of a process.
type rssPeak struct {
	pid int
	max int64
}

// sample reads the process's RssAnon every 20 ms until stop is called.
func (p *rssPeak) sample(t *testing.T) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if n, err := rssAnon(p.pid); err == nil {
				p.max = max(p.max, n)
			}
			select {
			case <-tick.C:
			case <-done:
				return
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func rssAnon(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no RssAnon for %d", pid)
}
