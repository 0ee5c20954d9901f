package client

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"testing"
)

// benchConfigMap is a ConfigMap as a typed client decodes it.
type benchConfigMap struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Metadata   struct {
		Name            string            `json:"name,omitempty"`
		Namespace       string            `json:"namespace,omitempty"`
		UID             string            `json:"uid,omitempty"`
		ResourceVersion string            `json:"resourceVersion,omitempty"`
		Labels          map[string]string `json:"labels,omitempty"`
		Annotations     map[string]string `json:"annotations,omitempty"`
	} `json:"metadata"`
	Data map[string]string `json:"data,omitempty"`
}

// watchBenchStream is a stream of n ADDED events of ~1 KiB ConfigMaps.
func watchBenchStream(n int) []byte {
	var b bytes.Buffer
	pad := strings.Repeat("v", 800)
	for i := range n {
		fmt.Fprintf(&b, `{"type":"ADDED","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm-%d","namespace":"default","uid":"0b7a3f0e-0000-4000-8000-%012d","resourceVersion":"%d","labels":{"app":"bench","tier":"x"}},"data":{"key":"%s"}}}`+"\n", i, i, i+1, pad)
	}
	return b.Bytes()
}

// BenchmarkWatchDecode decodes a stream of 10,000 1 KiB ConfigMap events.
func BenchmarkWatchDecode(b *testing.B) {
	data := watchBenchStream(10000)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		w := NewStreamWatch[*benchConfigMap](io.NopCloser(bytes.NewReader(data)))
		n := 0
		for range w.Events() {
			n++
		}
		if err := w.Err(); err != nil || n != 10000 {
			b.Fatalf("%d events, err %v", n, err)
		}
	}
}
