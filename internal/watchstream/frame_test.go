package watchstream

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// TestSharedFrame: the watches sending the same item share one frame, the
// chunk holding exactly what AppendFrame writes for it; another type, other
// bytes, a Table or protobuf watch, or a send of several items get none.
func TestSharedFrame(t *testing.T) {
	var frames lastFrame
	obj := []byte(`{"kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}`)
	modified := watchcache.Item{Type: api.Modified, Rev: 7, Object: obj}
	jsonWatch := func() *encoder { return &encoder{Encoder: plainJSON{}, plain: true, frames: &frames} }

	f, ok := jsonWatch().sharedFrame([]watchcache.Item{modified})
	if !ok {
		t.Fatal("no shared frame for a JSON watch's one MODIFIED item")
	}
	var want bytes.Buffer
	writeFrame(&want, modified)
	if got := string(f.frame()); got != want.String() {
		t.Errorf("frame %q, want %q", got, want.String())
	}
	if got, wantChunk := string(f.chunk), fmt.Sprintf("%x\r\n%s\r\n", want.Len(), want.String()); got != wantChunk {
		t.Errorf("chunk %q, want %q", got, wantChunk)
	}
	if again, _ := jsonWatch().sharedFrame([]watchcache.Item{modified}); again != f {
		t.Error("a second watch sending the same item made another frame")
	}

	added := modified
	added.Type = api.Added // a watch whose selector the object entered
	if g, _ := jsonWatch().sharedFrame([]watchcache.Item{added}); g == f || !bytes.HasPrefix(g.frame(), []byte(`{"type":"ADDED"`)) {
		t.Errorf("ADDED item: frame %q, want its own ADDED frame", g.frame())
	}
	copied := modified
	copied.Object = bytes.Clone(obj)
	if g, _ := jsonWatch().sharedFrame([]watchcache.Item{copied}); g == f {
		t.Error("other object bytes got the frame of the first")
	}

	for name, items := range map[string][]watchcache.Item{
		"two items": {modified, modified},
		"bookmark":  {{Type: api.Bookmark, Rev: 7}},
	} {
		if _, ok := jsonWatch().sharedFrame(items); ok {
			t.Errorf("%s: a shared frame, want none", name)
		}
	}
	for name, e := range map[string]*encoder{
		"table":        {Encoder: plainJSON{}, frames: &frames},
		"protobuf":     {Encoder: plainJSON{}, frames: &frames, protobuf: true},
		"not detached": {Encoder: plainJSON{}, plain: true},
	} {
		if _, ok := e.sharedFrame([]watchcache.Item{modified}); ok {
			t.Errorf("%s watch: a shared frame, want none", name)
		}
	}
}

// TestLaneChunks: a lane's batch of one item is the shared frame's chunk;
// of several, their chunks one after another, and the body bytes are
// their JSON lines' (what the access log counts).
func TestLaneChunks(t *testing.T) {
	var frames lastFrame
	a := watchcache.Item{Type: api.Added, Rev: 7, Object: []byte(`{"metadata":{"name":"a","resourceVersion":"7"}}`)}
	b := watchcache.Item{Type: api.Deleted, Rev: 8, Object: []byte(`{"metadata":{"name":"b","resourceVersion":"8"}}`)}
	one, body := frames.chunks([]watchcache.Item{a})
	if f := frames.of(a); &one[0] != &f.chunk[0] || body != int64(len(f.frame())) {
		t.Errorf("one item: chunk %q (body %d), want the shared frame's %q (%d)", one, body, f.chunk, len(f.frame()))
	}
	two, body := frames.chunks([]watchcache.Item{a, b})
	var want bytes.Buffer
	var lines int
	for _, it := range []watchcache.Item{a, b} {
		var line bytes.Buffer
		writeFrame(&line, it)
		fmt.Fprintf(&want, "%x\r\n%s\r\n", line.Len(), line.String())
		lines += line.Len()
	}
	if string(two) != want.String() || body != int64(lines) {
		t.Errorf("two items: %q (body %d), want %q (%d)", two, body, want.String(), lines)
	}
}

// plainJSON encodes as the server does a watch of the objects in JSON.
type plainJSON struct{}

func (plainJSON) AppendFrame(vecs [][]byte, it watchcache.Item) [][]byte {
	obj := it.Object
	switch it.Type {
	case api.Bookmark:
		obj = fmt.Appendf(nil, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"%d"}}`, it.Rev)
	case api.Error:
		obj, _ = json.Marshal(it.Status)
	}
	return AppendJSONEvent(vecs, it.Type, obj)
}

// writeFrame appends an item's JSON line to buf.
func writeFrame(buf *bytes.Buffer, it watchcache.Item) {
	for _, b := range (plainJSON{}).AppendFrame(nil, it) {
		buf.Write(b)
	}
}
