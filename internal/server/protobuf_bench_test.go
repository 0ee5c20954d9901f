package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkListProtobuf lists 100 ConfigMaps of 1 KiB from the watch cache
// as protobuf, as client-go's typed clients ask.
func BenchmarkListProtobuf(b *testing.B) {
	h := benchServer(b)
	for i := range 100 {
		serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap(fmt.Sprint("c", i)), http.StatusCreated)
	}
	b.ReportAllocs()
	for b.Loop() {
		r := httptest.NewRequest(http.MethodGet, benchConfigMaps, nil)
		r.Header.Set("Accept", mediaProtobuf)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusOK || w.Header().Get("Content-Type") != mediaProtobuf {
			b.Fatalf("%d %s", w.Code, w.Header().Get("Content-Type"))
		}
	}
}
