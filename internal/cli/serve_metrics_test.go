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
