package server

import (
	"fmt"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/listwatch/listwatch/api"
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
