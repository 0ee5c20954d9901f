package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/internal/testwait"
)

// TestTableRowsFromCache checks that a Table listed from the watch cache,
// whose rows' objects are made from the cached JSON, carries the bytes
// that encoding each decoded object gives, as a Table the store serves (a
// page) does, for every includeObject: kubectl prints the same.
func TestTableRowsFromCache(t *testing.T) {
	ts := newTestServer(t)
	for i := range 3 {
		// Metadata whose strings json.Marshal escapes (HTML, U+2028).
		pod := fmt.Sprintf(`{"metadata":{"name":"p%d","labels":{"app":"web"},"finalizers":["example.com/f"],
			"annotations":{"html":"<a href=\"x\">&amp;</a>","text":"é \u2028 \\ \"q\""}},
			"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, i)
		rawCall(t, ts, http.MethodPost, benchPods, mediaJSON, pod, http.StatusCreated)
		req, err := http.NewRequestWithContext(t.Context(), http.MethodPatch, ts.URL+benchPods+fmt.Sprintf("/p%d/status", i), strings.NewReader(benchPodStatus))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/merge-patch+json")
		resp, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status of p%d: %d", i, resp.StatusCode)
		}
	}
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	// rows are the rows' objects and cells, but the age, which may tick
	// between two requests.
	type row struct {
		Cells  []any
		Object json.RawMessage
	}
	rows := func(query string) []row {
		var tb struct {
			ColumnDefinitions []struct{ Name string }
			Rows              []row
		}
		if err := json.Unmarshal(rawCall(t, ts, http.MethodGet, benchPods+"?"+query, table, "", http.StatusOK), &tb); err != nil {
			t.Fatal(err)
		}
		for _, r := range tb.Rows {
			for i, c := range tb.ColumnDefinitions {
				if c.Name == "Age" {
					r.Cells[i] = nil
				}
			}
		}
		return tb.Rows
	}
	for _, include := range []string{"", "Metadata", "Object", "None"} {
		t.Run("includeObject="+include, func(t *testing.T) {
			cached := rows("resourceVersion=0&includeObject=" + include)
			stored := rows("limit=10&includeObject=" + include)
			if len(cached) != 3 || len(stored) != 3 {
				t.Fatalf("%d rows from the cache, %d from the store; want 3", len(cached), len(stored))
			}
			for i := range cached {
				if string(cached[i].Object) != string(stored[i].Object) {
					t.Errorf("row %d's object from the cache:\n%s\nfrom the store:\n%s", i, cached[i].Object, stored[i].Object)
				}
				if diff := cmp.Diff(stored[i].Cells, cached[i].Cells); diff != "" {
					t.Errorf("row %d's cells (-store +cache):\n%s", i, diff)
				}
				if include != "None" && !strings.Contains(string(cached[i].Object), `\u003ca href=\"x\"\u003e\u0026amp;\u003c/a\u003e`) {
					t.Errorf("row %d lacks the escaped annotation: %s", i, cached[i].Object)
				}
			}
		})
	}
}

// TestHPATableInStoredOrder checks that a v1 HPA prints as its stored v2
// object, as kube prints what it reads from storage: the metrics in v2's
// order (kube's printer lists cpu first here), which v1's form, the cpu
// target in its own field and the rest in an annotation, does not keep.
func TestHPATableInStoredOrder(t *testing.T) {
	ts := newTestServer(t)
	const (
		v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
		v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
	)
	rawCall(t, ts, http.MethodPost, v2, mediaJSON, `{"metadata":{"name":"web"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"web"},"maxReplicas":5,"metrics":[
		{"type":"Resource","resource":{"name":"cpu","target":{"type":"Utilization","averageUtilization":50}}},
		{"type":"Resource","resource":{"name":"memory","target":{"type":"AverageValue","averageValue":"100Mi"}}}]}}`, http.StatusCreated)
	targets := func(path string) []string {
		var tb struct {
			ColumnDefinitions []struct{ Name string }
			Rows              []struct{ Cells []any }
		}
		b := rawCall(t, ts, http.MethodGet, path, "application/json;as=Table;v=v1;g=meta.k8s.io", "", http.StatusOK)
		if err := json.Unmarshal(b, &tb); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range tb.Rows {
			for i, c := range tb.ColumnDefinitions {
				if c.Name == "Targets" {
					out = append(out, fmt.Sprint(r.Cells[i]))
				}
			}
		}
		return out
	}
	// The v2 cache, which the v1 Table reads, holds the HPA.
	testwait.Until(t, 10*time.Second, "the v2 list from the cache", func() bool { return len(targets(v2+"?resourceVersion=0")) == 1 })
	const want = "cpu: <unknown>/50%, memory: <unknown>/100Mi"
	for _, path := range []string{v1 + "/web", v1 + "?resourceVersion=0", v1 + "?limit=5", v2 + "/web"} {
		if got := targets(path); len(got) != 1 || got[0] != want {
			t.Errorf("Targets of %s: %q, want %q", path, got, want)
		}
	}
}
