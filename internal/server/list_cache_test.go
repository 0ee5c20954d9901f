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

	"github.com/listwatch/listwatch/api"
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
