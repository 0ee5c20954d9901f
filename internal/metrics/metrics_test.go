package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/watchcache"
)

// TestObserveRequest checks that requests are counted per label set and
// code, and their durations per label set, the same whether a label set's
// collectors are looked up or cached.
func TestObserveRequest(t *testing.T) {
	m := New()
	put := Request{Verb: "PUT", Version: "v1", Resource: "configmaps", Scope: "resource"}
	get := Request{Verb: "GET", Version: "v1", Resource: "configmaps", Scope: "resource"}
	m.ObserveRequest(put, 200, 2*time.Millisecond)
	m.ObserveRequest(put, 200, 30*time.Millisecond)
	m.ObserveRequest(put, 409, time.Millisecond)
	m.ObserveRequest(get, 200, time.Millisecond)
	const labels = `component="apiserver",dry_run="",group="",resource="configmaps",scope="resource",subresource="",`
	out := exposition(t, m)
	for _, series := range []string{
		`apiserver_request_total{code="200",` + labels + `verb="PUT",version="v1"} 2`,
		`apiserver_request_total{code="409",` + labels + `verb="PUT",version="v1"} 1`,
		`apiserver_request_total{code="200",` + labels + `verb="GET",version="v1"} 1`,
		`apiserver_request_duration_seconds_bucket{` + labels + `verb="PUT",version="v1",le="0.005"} 2`,
		`apiserver_request_duration_seconds_bucket{` + labels + `verb="PUT",version="v1",le="0.05"} 3`,
		`apiserver_request_duration_seconds_count{` + labels + `verb="PUT",version="v1"} 3`,
		`apiserver_request_duration_seconds_count{` + labels + `verb="GET",version="v1"} 1`,
	} {
		if !strings.Contains(out, series+"\n") {
			t.Errorf("no line %s in:\n%s", series, out)
		}
	}
}

// BenchmarkObserveRequest times recording one finished request.
func BenchmarkObserveRequest(b *testing.B) {
	m := New()
	put := Request{Verb: "PUT", Version: "v1", Resource: "configmaps", Scope: "resource"}
	b.ReportAllocs()
	for b.Loop() {
		m.ObserveRequest(put, 200, time.Millisecond)
	}
}

// TestWatchCacheMemory checks the series of the watch caches' byte
// bounds: what a resource's ring pins, its budget, the events it evicted
// for bytes, and the server-wide budget.
func TestWatchCacheMemory(t *testing.T) {
	m := New()
	r := m.Resource(ResourceID{Version: "v1", Kind: "ConfigMap", Resource: "configmaps"})
	r.SetRingBudget(64 << 20)
	r.RingBytes(1234)
	r.Evicted(2)
	r.Evicted(1)
	b := watchcache.NewBudget(256<<20, 64<<20)
	m.WatchCacheBudget(b)
	out := exposition(t, m)
	for _, series := range []string{
		`listwatch_watch_cache_ring_bytes{resource="configmaps"} 1234`,
		`listwatch_watch_cache_ring_budget_bytes{resource="configmaps"} 6.7108864e+07`,
		`listwatch_watch_cache_evicted_events_total{resource="configmaps"} 3`,
		`listwatch_watch_cache_budget_bytes 2.68435456e+08`,
		`listwatch_watch_cache_budget_used_bytes 0`,
		`listwatch_watch_replay_budget_bytes 6.7108864e+07`,
		`listwatch_watch_replay_bytes 0`,
	} {
		if !strings.Contains(out, series+"\n") {
			t.Errorf("no line %s in:\n%s", series, out)
		}
	}
}

// TestRetainKeepsSharedSeries: dropping one version of a resource keeps
// the series its versions share (labelled by group and resource) for the
// versions still served; dropping the last removes them.
func TestRetainKeepsSharedSeries(t *testing.T) {
	m := New()
	for _, v := range []string{"v1", "v2"} {
		m.Resource(ResourceID{Group: "example.com", Version: v, Kind: "Widget", Resource: "widgets"}).RingBytes(42)
	}
	const series = `listwatch_watch_cache_ring_bytes{resource="widgets.example.com"} 42`
	m.Retain(func(_, version, _ string) bool { return version == "v2" })
	if out := exposition(t, m); !strings.Contains(out, series+"\n") {
		t.Errorf("dropping v1 removed the series v2 shares:\n%s", out)
	}
	m.Retain(func(string, string, string) bool { return false })
	if out := exposition(t, m); strings.Contains(out, "widgets") {
		t.Errorf("dropping every version left series:\n%s", out)
	}
}
