package watchstream

import (
	"strconv"
	"sync/atomic"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// An event goes to every watch of its resource in turn, and most sends
// carry that one event: the detached watches share its JSON frame, made
// once, with the HTTP/1.1 chunk framing around it, and each sends it as
// one piece (an HTTP/2 stream sends the frame inside the chunk framing).
// Only the last event's frame is kept.

// eventFrame is one JSON watch event, framed, as every watch of the
// cache's shared object bytes sends it.
type eventFrame struct {
	obj   []byte // the item's Object: the frame's key, by identity
	typ   string
	chunk []byte // the chunk-size line, the frame, CRLF
	head  int    // the chunk-size line's length
}

// frame is the event's JSON line, without the chunk framing.
func (f *eventFrame) frame() []byte { return f.chunk[f.head : len(f.chunk)-len(crlf)] }

func (f *eventFrame) is(it watchcache.Item) bool {
	return f.typ == it.Type && len(f.obj) == len(it.Object) && &f.obj[0] == &it.Object[0]
}

// lastFrame holds the frame of the event sent last, for the next watch
// that sends it; any goroutine.
type lastFrame struct{ p atomic.Pointer[eventFrame] }

// of returns its frame, making it unless it is the last one made.
func (l *lastFrame) of(it watchcache.Item) *eventFrame {
	if f := l.p.Load(); f != nil && f.is(it) {
		return f
	}
	f := newEventFrame(it)
	l.p.Store(f)
	return f
}

func newEventFrame(it watchcache.Item) *eventFrame {
	chunk, head := appendEventChunk(make([]byte, 0, maxChunkHead+eventSize(it)+len(crlf)), it)
	return &eventFrame{obj: it.Object, typ: it.Type, chunk: chunk, head: head}
}

// eventSize is the length of an item's JSON line.
func eventSize(it watchcache.Item) int {
	return len(framePrefix[it.Type]) + len(it.Object) + len(frameSuffix)
}

// appendEventChunk appends an item's JSON line as one chunk, and returns
// where the line starts (after the chunk-size line).
func appendEventChunk(buf []byte, it watchcache.Item) ([]byte, int) {
	buf = strconv.AppendInt(buf, int64(eventSize(it)), 16)
	buf = append(buf, crlf...)
	head := len(buf)
	buf = append(append(append(buf, framePrefix[it.Type]...), it.Object...), frameSuffix...)
	return append(buf, crlf...), head
}

// sharedFrame returns the frame of the one item of a send, if this watch
// sends it as every other does: JSON, the object itself, an object event.
func (e *encoder) sharedFrame(items []watchcache.Item) (*eventFrame, bool) {
	if len(items) != 1 || e.frames == nil || !e.plain {
		return nil, false
	}
	switch it := items[0]; it.Type {
	case api.Added, api.Modified, api.Deleted:
		if len(it.Object) == 0 {
			return nil, false
		}
		return e.frames.of(it), true
	}
	return nil, false
}

// chunks returns the items' events as chunks, one each, and their bytes
// without the chunk framing: for one event, the frame every watch shares.
// Each item must be an object event.
func (l *lastFrame) chunks(items []watchcache.Item) ([]byte, int64) {
	if len(items) == 1 {
		f := l.of(items[0])
		return f.chunk, int64(len(f.frame()))
	}
	var buf []byte
	var body int64
	for _, it := range items {
		buf, _ = appendEventChunk(buf, it)
		body += int64(eventSize(it))
	}
	return buf, body
}
