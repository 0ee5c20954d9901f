package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
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

// TestWatchNoLanes: with Config.NoWatchLanes, a cleartext watch is sent
// each write's events by the senders, and, level with the cache, waits
// idle for them rather than in a lane.
func TestWatchNoLanes(t *testing.T) {
	s, ts := newQuietServer(t, Config{NoWatchLanes: true})
	w := dialRawWatch(t, ts, "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=5")
	d := onlyDetachedWatch(t, s)
	for round := range 2 {
		want := scriptNamed(t, ts, fmt.Sprintf("r%d-", round))
		var got storagetest.History
		for len(got) < len(want) {
			for _, ev := range w.events(w.chunk()) {
				obj, err := api.ParseObject(ev.Object)
				if err != nil {
					t.Fatal(err)
				}
				got = append(got, event{ev.Type, obj}.record())
			}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("the watch was sent\n%v\nwant\n%v", got, want)
		}
		pollUntil(t, "the watch idle", func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.state == idle
		})
	}
	if d.laneSink != nil {
		t.Error("a watch of a server without lanes may enter one")
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

// newQuietServer serves a Server of cfg on a memory store, without logs,
// over HTTP/1.1 and h2c.
func newQuietServer(tb testing.TB, cfg Config) (*Server, *httptest.Server) {
	tb.Helper()
	store := memory.New()
	cfg.Storage, cfg.Logger = store, slog.New(slog.DiscardHandler)
	s, err := New(tb.Context(), cfg)
	if err != nil {
		tb.Fatal(err)
	}
	ts := serveHTTP(s.Handler())
	tb.Cleanup(func() { s.Close(); ts.Close(); store.Close() })
	return s, ts
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
	s, ts := newQuietServer(t, Config{})
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
	// The watch's slot writes through ws from now on: no write, no wake
	// comes between.
	ws := &windowSink{laneConn: d.laneSink.(*laneConn), partial: partial}
	if !d.w.LeaveLane() || !d.w.EnterLane(ws) {
		t.Fatal("the watch could not be moved to the test's sink")
	}
	x := put("x")
	var y captured
	ww := windowWriter{laneWriter: laneWriter{x.m}, between: func() {
		y = put("y") // its lane task is not run: the watch, woken, takes y from the ring
		d.Wake()
		pollUntil(t, "the watch served", func() bool {
			d.mu.Lock()
			defer d.mu.Unlock()
			return d.state != queued && d.state != running
		})
	}}
	if !partial {
		ws.during = func() { d.w.LeaveLane() } // held: wanted out
	}
	x.b.ServeLane(x.lane[0], ww)
	want := string(x.b.Frame) + string(y.b.Frame)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(w.r, got); err != nil || string(got) != want {
		t.Fatalf("the client read %q (%v), want %q", got, err, want)
	}
	var state sendState
	pollUntil(t, "the watch settled", func() bool {
		d.mu.Lock()
		defer d.mu.Unlock()
		state = d.state
		return state == idle || state == laned
	})
	// EnterLane takes the cache's lock, which is taken before d.mu: the
	// watch is settled, nothing changes its state meanwhile.
	if entered := d.w.EnterLane(ws); state == idle && !entered {
		t.Fatal("the watch is idle, served by the senders, while its slot is in its lane")
	}
}

// windowSink is a watch's laneConn whose sends write 10 bytes
// (partial), keeping the rest, or run during.
type windowSink struct {
	*laneConn
	partial bool
	during  func()
}

func (ws *windowSink) SendNow(frames [][]byte) (bool, error) {
	if !ws.partial {
		ws.during()
		return ws.laneConn.SendNow(frames)
	}
	if _, err := ws.laneConn.SendNow([][]byte{frames[0][:10]}); err != nil {
		return false, err
	}
	ws.keep(frames, 10)
	return false, nil
}

// windowWriter is a laneWriter whose hand-offs run between first, once
// the slot has left the lane.
type windowWriter struct {
	laneWriter
	between func()
}

func (ww windowWriter) HandOff(wk watchcache.Waker, failed bool) {
	ww.between()
	ww.laneWriter.HandOff(wk, failed)
}
