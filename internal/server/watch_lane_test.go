package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/storage/memory"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// TestWatchLane: an HTTP/1.1 watch in cleartext enters its lane once
// level, and is sent the events of each later write from there, in order
// and once each; a bookmark takes it out of the lane and back; its access
// log counts the bytes its lane sent.
func TestWatchLane(t *testing.T) {
	ended := make(chan slog.Record, 256) // the writes' lines too: a full channel drops lines
	store := memory.New()
	s, err := New(t.Context(), Config{Storage: store, Logger: slog.New(recordHandler(ended)), BookmarkInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close(); store.Close() })

	w := dialRawWatch(t, ts, "/api/v1/namespaces/default/configmaps?watch=true&allowWatchBookmarks=true&timeoutSeconds=3")
	d := onlyDetachedWatch(t, s)
	var want, got storagetest.History
	var body int64
	bookmarks := 0
	read := func() bool { // one chunk; false at the terminating one
		ch := w.chunk()
		if len(ch) == 0 {
			return false
		}
		body += int64(len(ch))
		for _, ev := range w.events(ch) {
			if ev.Type == api.Bookmark {
				bookmarks++
				continue
			}
			obj, err := api.ParseObject(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, event{ev.Type, obj}.record())
		}
		return true
	}
	for round := range 3 {
		waitLaned(t, d)
		want = append(want, scriptNamed(t, ts, fmt.Sprintf("r%d-", round))...)
		for len(got) < len(want) {
			read()
		}
	}
	for read() {
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the watch was sent\n%v\nwant\n%v", got, want)
	}
	if bookmarks == 0 {
		t.Error("no bookmark in 3 s of a watch with a 50 ms bookmark interval")
	}
	r := waitLogged(t, ended, "watch")
	if logged := attr(r, "bytes").Int64(); logged != body {
		t.Errorf("the access log says the watch was sent %d bytes, its client read %d", logged, body)
	}
}

// onlyDetachedWatch waits for s's one detached watch and returns it.
func onlyDetachedWatch(t *testing.T, s *Server) *detachedWatch {
	t.Helper()
	var found *detachedWatch
	pollUntil(t, "a detached watch", func() bool {
		s.streams.mu.Lock()
		defer s.streams.mu.Unlock()
		for d := range s.streams.live {
			found = d
		}
		return len(s.streams.live) == 1
	})
	return found
}

// waitLaned waits until d is in its lane.
func waitLaned(t *testing.T, d *detachedWatch) {
	t.Helper()
	pollUntil(t, "the watch in its lane", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.state == laned
	})
}

// pollUntil polls cond until it holds, failing after 10 s.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestLaneHandOffWindow: a wake between a slot's leaving the lane and its
// watch's hand-off (a bookmark's tick, the reader, the task of a batch of
// another block's) may serve the watch, and even put it back in its lane,
// before the hand-off. So a write not whole keeps its
// rest in the sink before the slot leaves (the client reads both events
// whole, in order), and a hand-off finding the watch in its lane again
// takes it out before it is served (never served by the senders while its
// slot is in).
func TestLaneHandOffWindow(t *testing.T) {
	for _, partial := range []bool{true, false} {
		t.Run(fmt.Sprintf("partial=%v", partial), func(t *testing.T) { testLaneHandOffWindow(t, partial) })
	}
}

// testLaneHandOffWindow: the slot leaves after a write not whole
// (partial), or after a whole one whose watch wanted out meanwhile.
func testLaneHandOffWindow(t *testing.T, partial bool) {
	store := memory.New()
	s, err := New(t.Context(), Config{Storage: store, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := serveHTTP(s.Handler())
	t.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	type captured struct {
		b    *watchcache.PollBatch
		lane []*watchcache.LaneBlock
		m    *metrics.Resource
	}
	batches := make(chan captured, 16)
	s.caches.mu.Lock()
	s.caches.wake = func(b *watchcache.PollBatch, m *metrics.Resource) { // the test serves the lanes
		if lane := b.Lane; len(lane) > 0 {
			b.Frame, b.Body = s.streams.frames.chunks(b.Items)
			b.Lane = nil // the rest to the senders
			batches <- captured{b, lane, m}
		}
		s.streams.wakeAll(b, m)
	}
	s.caches.mu.Unlock()

	const cms = "/api/v1/namespaces/default/configmaps"
	w := dialRawWatch(t, ts, cms+"?watch=true&timeoutSeconds=5")
	d := onlyDetachedWatch(t, s)
	waitLaned(t, d)
	put := func(name string) captured {
		if code, _ := call(t, ts, "POST", cms, mediaJSON, fmt.Sprintf(`{"metadata":{"name":%q}}`, name)); code != http.StatusCreated {
			t.Fatalf("create %s: %d", name, code)
		}
		return <-batches
	}
	x := put("x")
	var y captured
	ww := windowWriter{laneWriter: laneWriter{x.m}, partial: partial, between: func() {
		y = put("y") // its lane task is not run: the watch, woken, takes y from the ring
		d.Wake()
		pollUntil(t, "the watch served", func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.state != queued && d.state != running
		})
	}}
	if !partial {
		ww.during = func() { d.w.LeaveLane() } // held: wanted out
	}
	x.b.ServeLane(x.lane[0], ww)
	want := string(x.b.Frame) + string(y.b.Frame)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(w.r, got); err != nil || string(got) != want {
		t.Fatalf("the client read %q (%v), want %q", got, err, want)
	}
	pollUntil(t, "the watch settled", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		return d.state == idle || d.state == laned
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	if entered := d.w.EnterLane(d.laneFD); d.state == idle && !entered {
		t.Fatal("the watch is idle, served by the senders, while its slot is in its lane")
	}
}

// windowWriter is a laneWriter whose sends write 10 bytes (partial) or
// run during, and whose hand-offs run between first, once the slot has
// left the lane.
type windowWriter struct {
	laneWriter
	partial bool
	during  func()
	between func()
}

func (ww windowWriter) Send(fd int32, frames [][]byte) int {
	if ww.partial {
		return ww.laneWriter.Send(fd, [][]byte{frames[0][:10]})
	}
	ww.during()
	return ww.laneWriter.Send(fd, frames)
}

func (ww windowWriter) HandOff(wk watchcache.Waker, failed bool) {
	ww.between()
	ww.laneWriter.HandOff(wk, failed)
}
