package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestListFromCacheLargerThanWriteBuffer checks a list from the cache that
// is written in several pieces: its Content-Length is its length, and it
// holds every object in key order.
func TestListFromCacheLargerThanWriteBuffer(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	pad := strings.Repeat("x", 1024)
	const n = 3 * listWriteBuffer / 1024 // three buffers' worth
	for i := range n {
		if code, _ := call(t, ts, "POST", cms, mediaJSON, fmt.Sprintf(`{"metadata":{"name":"l%04d"},"data":{"pad":%q}}`, i, pad)); code != http.StatusCreated {
			t.Fatalf("create %d: %d", i, code)
		}
	}
	code, header, body := get(t, ts.Client(), "GET", ts.URL+cms+"?resourceVersion=0", nil)
	if code != http.StatusOK {
		t.Fatalf("list: %d %s", code, body)
	}
	if cl, _ := strconv.Atoi(header.Get("Content-Length")); cl != len(body) {
		t.Errorf("Content-Length %s, body %d bytes", header.Get("Content-Length"), len(body))
	}
	var list struct {
		Kind  string
		Items []api.Object
	}
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		t.Fatalf("the list is not JSON: %v", err)
	}
	if list.Kind != "ConfigMapList" || len(list.Items) != n {
		t.Fatalf("%s of %d items, want ConfigMapList of %d", list.Kind, len(list.Items), n)
	}
	for i, o := range list.Items {
		if want := fmt.Sprintf("l%04d", i); o.Name() != want {
			t.Fatalf("item %d is %s, want %s", i, o.Name(), want)
		}
	}
}

// BenchmarkListTableHeap lists 10,000 ConfigMaps of 1 KiB from the cache
// as a Table and reports the live heap after it (live-heap-MiB, after a
// collection): what a Table or protobuf LIST leaves the cache holding.
func BenchmarkListTableHeap(b *testing.B) {
	h := benchServer(b)
	const n = 10_000
	for i := range n {
		serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap(fmt.Sprint("t", i)), http.StatusCreated)
	}
	table := "application/json;as=Table;v=v1;g=meta.k8s.io"
	list := func() {
		r := httptest.NewRequest(http.MethodGet, benchConfigMaps+"?resourceVersion=0", nil)
		r.Header.Set("Accept", table)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK {
			b.Fatalf("list as Table: %d %s", w.Code, w.Body)
		}
	}
	list() // the cache is ready and listed once
	var m runtime.MemStats
	for b.Loop() {
		list()
	}
	runtime.GC()
	runtime.ReadMemStats(&m)
	b.ReportMetric(float64(m.HeapAlloc)/(1<<20), "live-heap-MiB")
}

// TestListFallbackCounted checks a list racing a change of its resource's
// definition: no cache serves the definition it began with, so the store
// serves it, and the fallback is counted.
func TestListFallbackCounted(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	do(t, ts, "POST", crdsPath, "", gadgetCRD)
	var old *resource.Resource
	waitFor(t, s, func() bool { old, _ = s.catalog.Get("example.com", "v1", "gadgets"); return old != nil })
	if r := do(t, ts, "POST", gadgets, "", `{"metadata":{"name":"g"}}`); r.code != http.StatusCreated {
		t.Fatalf("create: %d %v", r.code, r.obj)
	}
	if r := do(t, ts, "PATCH", crdsPath+"/gadgets.example.com", "", `{"metadata":{"labels":{"edited":"yes"}}}`); r.code != http.StatusOK {
		t.Fatalf("redefine: %d %v", r.code, r.obj)
	}
	waitFor(t, s, func() bool { cur, _ := s.catalog.Get("example.com", "v1", "gadgets"); return cur != old })
	const series = `listwatch_watch_cache_list_fallback_total{reason="no_cache",resource="gadgets.example.com"}`
	if n := scrape(t, s)[series]; n != 0 {
		t.Fatalf("%s = %v before the list", series, n)
	}
	rec := httptest.NewRecorder()
	q := &request{s: s, w: rec, r: httptest.NewRequest("GET", gadgets+"?resourceVersion=0", nil), res: old, out: output{mediaType: mediaJSON}}
	q.list()
	var list struct{ Items []api.Object }
	if err := json.Unmarshal(rec.Body.Bytes(), &list); rec.Code != http.StatusOK || err != nil || len(list.Items) != 1 || list.Items[0].Name() != "g" {
		t.Fatalf("list: %d %s (%v), want the store's one gadget", rec.Code, rec.Body, err)
	}
	if n := scrape(t, s).value(t, series); n != 1 {
		t.Errorf("%s = %v, want 1", series, n)
	}
}
