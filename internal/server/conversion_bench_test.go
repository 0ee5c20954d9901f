package server

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// BenchmarkWatchConverted writes one custom resource per op in its stored
// version and waits until each of 100 watchers has it, watching the stored
// version (v1) or the one a conversion webhook serves (v2): the webhook's
// share of an event's fan-out, one call per event, not per watcher.
func BenchmarkWatchConverted(b *testing.B) {
	for _, version := range []string{"v1", "v2"} {
		b.Run("version="+version, func(b *testing.B) {
			h := benchServer(b)
			ts := httptest.NewServer(h)
			b.Cleanup(ts.Close)
			c := startConverter(b)
			serveBench(b, h, http.MethodPost, crdsPath, c.cronCRD(), http.StatusCreated)
			got := make(chan struct{}, 1024)
			const watchers = 100
			path := fmt.Sprintf("/apis/example.com/%s/namespaces/default/crons?watch=true", version)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			b.Cleanup(func() { cancel(); wg.Wait() })
			for range watchers {
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+path, nil)
				resp, err := ts.Client().Do(req)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("watch: %v %v", err, resp)
				}
				wg.Go(func() {
					defer resp.Body.Close()
					sc := bufio.NewScanner(resp.Body)
					for sc.Scan() {
						got <- struct{}{}
					}
				})
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				body := fmt.Sprintf(`{"metadata":{"name":"c%d"},"spec":{"size":%d}}`, i, i)
				serveBench(b, h, http.MethodPost, cronsV1, body, http.StatusCreated)
				for range watchers {
					<-got
				}
				i++
			}
			b.ReportMetric(float64(c.count("example.com/"+version))/float64(i), "calls/op")
		})
	}
}
