package watchstream

import (
	"bytes"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
)

// BenchmarkTLSFanout measures one event of a 1 KiB object sent to 1,000
// HTTP/1.1 watches over TLS, from their lanes or by the senders
// (Config.NoLanes): an op ends once every watch's client has read it.
// cpu-µs/delivery is the process's CPU time (the clients' reads and
// decryption too, the same in both) per watch sent the event: on a shared
// machine a steadier figure than the wall time.
func BenchmarkTLSFanout(b *testing.B) {
	b.Run("lanes", func(b *testing.B) { benchTLSFanout(b, Config{}) })
	b.Run("senders", func(b *testing.B) { benchTLSFanout(b, Config{NoLanes: true}) })
}

func benchTLSFanout(b *testing.B, cfg Config) {
	const watchers = 1000
	x := newTestServer(b, cfg)
	x.ended = make(chan int64, watchers) // each watch's end, at the close: none waits
	ts := x.serve("TLS")
	read := make(chan struct{}, watchers)
	for range watchers {
		conn := dial(b, ts)
		fmt.Fprintf(conn, "GET /?timeout=10m HTTP/1.1\r\nHost: bench\r\n\r\n")
		go streamtest.CountEvents(conn, read)
	}
	pad := bytes.Repeat([]byte("x"), 1024)
	i := 0
	put := func() {
		x.put(fmt.Sprintf("c%d-%s", i, pad))
		i++
		for range watchers {
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				b.Fatal("a watch was not sent an event within 10 s")
			}
		}
	}
	for range 10 { // every watch started, and level (in its lane, if lanes serve it)
		put()
	}
	b.ReportAllocs()
	start := cpuTime()
	for b.Loop() {
		put()
	}
	b.ReportMetric(float64((cpuTime()-start).Microseconds())/float64(b.N*watchers), "cpu-µs/delivery")
}

// cpuTime is the process's CPU time, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
