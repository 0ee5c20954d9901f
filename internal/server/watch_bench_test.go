package server

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
)

// BenchmarkWatchFanout measures one update of a 1 KiB ConfigMap sent to
// 100 cleartext HTTP/1.1 watches, from their lanes or by the senders
// (Config.NoWatchLanes), as `listwatch bench fanout` does at scale: an op
// ends once every watch's client has read the event.
// The h2 case is the 100 watches as streams of one h2c connection, as
// client-go opens them: their senders share its write side.
func BenchmarkWatchFanout(b *testing.B) {
	b.Run("lanes", func(b *testing.B) { benchWatchFanout(b, Config{}, false) })
	b.Run("senders", func(b *testing.B) { benchWatchFanout(b, Config{NoWatchLanes: true}, false) })
	b.Run("h2", func(b *testing.B) { benchWatchFanout(b, Config{}, true) })
}

func benchWatchFanout(b *testing.B, cfg Config, h2c bool) {
	const watchers = 100
	s, ts := newQuietServer(b, cfg)
	h := s.Handler()
	serveBench(b, h, http.MethodPost, benchConfigMaps, benchConfigMap("a"), http.StatusCreated)

	read := make(chan struct{}, watchers)
	watch := benchConfigMaps + "/a?watch=true&resourceVersion=0"
	client := &http.Client{Transport: &http.Transport{Protocols: unencryptedHTTP2()}}
	b.Cleanup(client.CloseIdleConnections)
	for range watchers {
		if h2c {
			resp, err := client.Get(ts.URL + watch)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { resp.Body.Close() })
			go streamtest.CountEvents(resp.Body, read)
			continue
		}
		conn, err := net.Dial("tcp", ts.Listener.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: bench\r\n\r\n", watch)
		go streamtest.CountEvents(conn, read)
	}
	for range watchers { // each watch's ADDED: it has started
		<-read
	}
	body := benchConfigMap("a")
	update := func(i int) {
		ts := fmt.Sprintf("%019d", i)
		serveBench(b, h, http.MethodPut, benchConfigMaps+"/a", strings.Replace(body, "1763794353000000000", ts, 1), http.StatusOK)
		for range watchers {
			select {
			case <-read:
			case <-time.After(10 * time.Second):
				b.Fatal("a watch was not sent an update within 10 s")
			}
		}
	}
	for i := range 10 { // every watch level (in its lane, if lanes serve it)
		update(-1 - i)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		update(i)
		i++
	}
}
