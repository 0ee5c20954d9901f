package watchstream

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
)

// TestWatchLane: an HTTP/1.1 watch, in cleartext or over TLS, enters its
// lane once level, and is sent the events of each later write from there,
// in order and once each; a bookmark takes it out of the lane and back;
// the end of the request (its access log) counts the bytes its lane sent.
func TestWatchLane(t *testing.T) {
	for _, transport := range []string{"cleartext", "TLS"} {
		t.Run(transport, func(t *testing.T) { testWatchLane(t, transport) })
	}
}

func testWatchLane(t *testing.T, transport string) {
	x := newTestServer(t, Config{BookmarkInterval: 50 * time.Millisecond})
	w := streamtest.OpenWatch(t, dial(t, x.serve(transport)), "/?bookmarks=1&timeout=3s")
	d := x.only()
	var want, got []string
	var body int64
	bookmarks := 0
	read := func() bool { // one chunk; false at the terminating one
		ch := w.Chunk()
		if len(ch) == 0 {
			return false
		}
		body += int64(len(ch))
		for _, ev := range w.Events(ch) {
			if ev.Type == api.Bookmark {
				bookmarks++
				continue
			}
			obj, err := api.ParseObject(ev.Object)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, ev.Type+" "+obj.Name())
		}
		return true
	}
	for round := range 3 {
		waitState(t, d, laned)
		for i := range 3 {
			name := fmt.Sprintf("r%d-%d", round, i)
			x.put(name)
			want = append(want, api.Added+" "+name)
		}
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
	if logged := <-x.ended; logged != body {
		t.Errorf("the watch's end says it was sent %d bytes, its client read %d", logged, body)
	}
}

// TestWatchNoLanes: with Config.NoLanes, a cleartext watch is sent each
// write's events by the senders, and, level with the cache, waits idle
// for them rather than in a lane.
func TestWatchNoLanes(t *testing.T) {
	x := newTestServer(t, Config{NoLanes: true})
	w := streamtest.OpenWatch(t, dial(t, x.serve("cleartext")), "/?timeout=5s")
	d := x.only()
	for round := range 2 {
		name := fmt.Sprintf("r%d", round)
		x.put(name)
		evs := w.Events(w.Chunk())
		if len(evs) != 1 || evs[0].Type != api.Added {
			t.Fatalf("the watch was sent %v, want the ADDED %s", evs, name)
		}
		if obj, err := api.ParseObject(evs[0].Object); err != nil || obj.Name() != name {
			t.Fatalf("the watch was sent %s (%v), want %s", evs[0].Object, err, name)
		}
		waitState(t, d, idle)
	}
	if d.laneSink != nil {
		t.Error("a watch of an engine without lanes may enter one")
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
	x := newTestServer(t, Config{})
	type captured struct {
		b    *watchcache.PollBatch
		lane []*watchcache.LaneBlock
	}
	batches := make(chan captured, 16)
	x.mu.Lock()
	x.wake = func(b *watchcache.PollBatch) { // the test serves the lanes
		if lane := b.Lane; len(lane) > 0 {
			b.Lane = nil // the rest to the senders
			batches <- captured{b, lane}
		}
		x.e.WakePolled(b, x.m)
	}
	x.mu.Unlock()

	w := streamtest.OpenWatch(t, dial(t, x.serve("cleartext")), "/?timeout=5s")
	d := x.only()
	waitState(t, d, laned)
	put := func(name string) captured {
		x.put(name)
		return <-batches
	}
	// The watch's slot writes through ws from now on: no write, no wake
	// comes between.
	ws := &windowSink{laneConn: d.laneSink.(*laneConn), partial: partial}
	if !d.w.LeaveLane() || !d.w.EnterLane(ws) {
		t.Fatal("the watch could not be moved to the test's sink")
	}
	xb := put("x")
	var y captured
	ws.between = func() {
		y = put("y") // its lane task is not run: the watch, woken, takes y from the ring
		d.Wake()
		waitState(t, d, starting, idle, laned, dedicated, finished) // served
	}
	if !partial {
		ws.during = func() { d.w.LeaveLane() } // held: wanted out
	}
	xb.b.ServeLane(xb.lane[0], &laneWriter{m: x.m, frames: &x.e.frames})
	fx, _ := x.e.frames.chunks(xb.b.Items)
	fy, _ := x.e.frames.chunks(y.b.Items)
	want := string(fx) + string(fy)
	got := make([]byte, len(want))
	if _, err := io.ReadFull(w.R, got); err != nil || string(got) != want {
		t.Fatalf("the client read %q (%v), want %q", got, err, want)
	}
	state := waitState(t, d, idle, laned)
	// EnterLane takes the cache's lock, which is taken before d.mu: the
	// watch is settled, nothing changes its state meanwhile.
	if entered := d.w.EnterLane(ws); state == idle && !entered {
		t.Fatal("the watch is idle, served by the senders, while its slot is in its lane")
	}
}

// windowSink is a watch's laneConn whose lane sends write 10 bytes
// (partial), keeping the rest, or run during; its hand-offs run between
// first, once the slot has left the lane.
type windowSink struct {
	*laneConn
	partial bool
	during  func()
	between func()
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

func (ws *windowSink) HandOff(failed bool) {
	ws.between()
	ws.laneConn.HandOff(failed)
}

// TestLaneConnKeepsTheRest: a lane's send to a client that does not read,
// in cleartext or over TLS, writes what the socket takes without waiting,
// reports it not whole and leaves the watch's sink stalled with the rest;
// the watch's own flush then delivers every byte, in order, and a release
// ends the lane's sends.
func TestLaneConnKeepsTheRest(t *testing.T) {
	for name, connect := range map[string]func(*testing.T) (*connSink, net.Conn){"cleartext": cleartextSink, "tls": tlsSink} {
		t.Run(name, func(t *testing.T) {
			sink, client := connect(t)
			lc, ok := sink.laneSink(&detachedWatch{}).(*laneConn)
			if !ok {
				t.Fatal("a chunked watch's sink has no lane end")
			}
			var frames [][]byte // far more than loopback's socket buffers
			var want bytes.Buffer
			for i := range 40 {
				f := []byte(fmt.Sprintf("%d:%s;", i, strings.Repeat("x", 256<<10)))
				frames = append(frames, f)
				want.Write(f)
			}
			whole, err := lc.SendNow(frames)
			if err != nil || whole {
				t.Fatalf("a 10 MB send to a client that does not read: whole %v, %v; want the rest kept", whole, err)
			}
			if !sink.stalled() {
				t.Fatal("the sink is not stalled after a send not whole")
			}
			got := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(client)
				got <- b
			}()
			if err := sink.flush(); err != nil { // the watch's own goroutine: blocking
				t.Fatal(err)
			}
			lc.Release()
			if whole, err := lc.SendNow(frames[:1]); whole || err == nil {
				t.Errorf("a send after the release: whole %v, %v; want it refused", whole, err)
			}
			sink.abort()
			if b := <-got; !bytes.Equal(b, want.Bytes()) {
				t.Fatalf("the client read %d bytes, not the %d sent in order", len(b), want.Len())
			}
		})
	}
}
