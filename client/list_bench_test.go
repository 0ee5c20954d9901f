package client

import (
	"bytes"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"
)

// listBenchBody is a list of n ~1.3 KiB ConfigMaps as the server writes
// one page.
func listBenchBody(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"kind":"ConfigMapList","apiVersion":"v1","metadata":{"resourceVersion":"123","continue":"abc"},"items":[`)
	v := strings.Repeat("x", 1024)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{"metadata":{"name":"bench-%06d","namespace":"default","uid":"0b7a3f0e-0000-4000-8000-%012d","resourceVersion":"%d","creationTimestamp":"2026-11-22T08:00:00Z","labels":{"app":"bench"},"annotations":{"a":"b"}},"data":{"value":"%s"}}`, i, i, i+1, v)
	}
	b.WriteString(`]}`)
	return b.Bytes()
}

// BenchmarkListDecode decodes pages of 500 ~1.3 KiB ConfigMaps; cpu-ms/op
// is the process's CPU per page (the decoders run on several goroutines).
func BenchmarkListDecode(b *testing.B) {
	data := listBenchBody(500)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	cpu0 := processCPU()
	for b.Loop() {
		var l list[*benchConfigMap]
		if err := decodeList(newJSONReader(bytes.NewReader(data)), &l); err != nil || len(l.Items) != 500 {
			b.Fatalf("%d items, err %v", len(l.Items), err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
