package cli

import (
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestServeExportsCommitMetrics checks that `listwatch serve` on the
// embedded store exports the store's commit histograms, and that a write
// adds a commit.
func TestServeExportsCommitMetrics(t *testing.T) {
	url := startServe(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	before := scrapeSeries(t, hc, url)
	resp, err := hc.Post(url+"/api/v1/namespaces/default/configmaps", "application/json", strings.NewReader(`{"metadata":{"name":"counted"}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %d, want 201", resp.StatusCode)
	}
	after := scrapeSeries(t, hc, url)
	for _, series := range []string{
		`listwatch_storage_commit_duration_seconds_bucket{le="0.0001"}`,
		`listwatch_storage_commit_duration_seconds_bucket{le="+Inf"}`,
		"listwatch_storage_commit_batch_size_count",
	} {
		if _, ok := after[series]; !ok {
			t.Errorf("no series %s in /metrics", series)
		}
	}
	const count = "listwatch_storage_commit_duration_seconds_count"
	if after[count] <= before[count] {
		t.Errorf("%s went from %v to %v over a write, want an increase", count, before[count], after[count])
	}
}

// scrapeSeries reads url's /metrics: each series (name and labels) and its
// value.
func scrapeSeries(t *testing.T, hc *http.Client, url string) map[string]float64 {
	t.Helper()
	resp, err := hc.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	series := map[string]float64{}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		i := strings.LastIndexByte(line, ' ') // a label value may hold spaces
		if i < 0 || strings.HasPrefix(line, "#") {
			continue
		}
		if series[line[:i]], err = strconv.ParseFloat(line[i+1:], 64); err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
	}
	return series
}

// TestServeWatchCacheBudgets checks that serve's budget flags reach the
// watch caches, as /metrics shows them once a cache has started, and that
// a budget of 0 is refused.
func TestServeWatchCacheBudgets(t *testing.T) {
	url := startServe(t, "--watch-cache-budget-mib", "8", "--watch-cache-resource-budget-mib", "2", "--watch-replay-budget-mib", "3")
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr}
	resp, err := hc.Get(url + "/api/v1/namespaces/default/configmaps?resourceVersion=0") // served by the watch cache
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := scrapeSeries(t, hc, url)
	for series, want := range map[string]float64{
		"listwatch_watch_cache_budget_bytes":                             8 << 20,
		`listwatch_watch_cache_ring_budget_bytes{resource="configmaps"}`: 2 << 20,
		"listwatch_watch_replay_budget_bytes":                            3 << 20,
	} {
		if got[series] != want {
			t.Errorf("%s = %v, want %v", series, got[series], want)
		}
	}
	for _, flag := range []string{"--watch-cache-budget-mib", "--watch-cache-resource-budget-mib", "--watch-replay-budget-mib"} {
		root := newRoot()
		root.SetArgs([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), flag, "0"})
		if err := root.ExecuteContext(t.Context()); err == nil || !strings.Contains(err.Error(), "must be positive") {
			t.Errorf("serve %s 0: %v, want an error", flag, err)
		}
	}
}
