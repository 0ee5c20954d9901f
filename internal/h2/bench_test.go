package h2_test

import (
	"fmt"
	"io"
	"net/http"
	"testing"
)

// BenchmarkRequests: GETs of a 1 KiB response over one HTTP/2 connection
// (TLS or h2c), one at a time and from GOMAXPROCS goroutines at once:
// over TLS a response goes through the connection's write queue and its
// flusher goroutine.
func BenchmarkRequests(b *testing.B) {
	body := make([]byte, 1024)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(body) })
	for _, tls := range []bool{true, false} {
		ts := newTestServer(b, tls, h)
		get := func(b *testing.B) {
			resp, err := ts.client.Get(ts.URL)
			if err != nil {
				b.Error(err) // not Fatal: RunParallel's goroutines call it too
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
		get(b) // the connection
		b.Run(fmt.Sprintf("tls=%v/serial", tls), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				get(b)
			}
		})
		b.Run(fmt.Sprintf("tls=%v/parallel", tls), func(b *testing.B) {
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					get(b)
				}
			})
		})
	}
}
