package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// watchEncoder turns items into the bytes of one event each. JSON events
// reuse the cached object bytes: only the envelope around them is written
// per watcher. It keeps nothing of the request, so that a stream that
// outlives its handler (connSink) does not keep net/http's buffers alive.
type watchEncoder struct {
	res           *resource.Resource
	includeObject string // the Table's includeObject parameter
	table         bool   // kubectl get -w: each object as a one-row Table
	protobuf      bool   // length-prefixed protobuf WatchEvents
	// partial is the apiVersion of the PartialObjectMetadata each object
	// is sent as, "" to send the objects.
	partial    string
	sentHeader bool
	frames     *lastFrame // the detached watches' shared frame (watch_frame.go)
}

func (q *request) watchEncoder() *watchEncoder {
	e := &watchEncoder{
		res: q.res, includeObject: q.r.URL.Query().Get("includeObject"),
		table: q.out.as == "Table", protobuf: q.out.mediaType == mediaProtobuf,
		frames: &q.s.streams.frames,
	}
	// The list form fits no event: kube's watch then sends the object as
	// it is (its Fixup gives up), and so does this one.
	if q.out.as == asPartial {
		e.partial = q.out.asGV
	}
	return e
}

// shared returns the memo of an item's encoding in form that every watch
// sending it shares, nil if this watch's is its own.
func (e *watchEncoder) shared(it watchcache.Item, form int) *watchcache.Encoded {
	switch {
	case it.Alt == nil || e.table || e.partial != "" && e.partial != metaV1:
		return nil
	case e.partial == "":
		return it.Alt // the object's protobuf
	}
	return it.Alt.Form(form)
}

// contentType is the media type of the stream.
func (e *watchEncoder) contentType() string {
	if e.protobuf {
		return protobuf.WatchContentType
	}
	return mediaJSON
}

var (
	framePrefix = map[string][]byte{}
	frameSuffix = []byte("}\n")
)

func init() {
	for _, t := range []string{api.Added, api.Modified, api.Deleted, api.Bookmark, api.Error} {
		framePrefix[t] = []byte(`{"type":"` + t + `","object":`)
	}
}

// object returns an item's object bytes as this watch sends them.
func (e *watchEncoder) object(it watchcache.Item) []byte {
	res := e.res
	switch it.Type {
	case api.Bookmark:
		if e.partial != "" {
			return bookmarkObject(e.partial, asPartial, it.Rev, it.InitialEventsEnd)
		}
		return bookmarkObject(res.APIVersion(), res.Kind, it.Rev, it.InitialEventsEnd)
	case api.Error:
		b, _ := json.Marshal(it.Status)
		return b
	}
	if e.partial != "" {
		return e.partialObject(it)
	}
	if !e.table {
		return it.Object
	}
	obj, err := api.ParseObject(it.Object)
	if err != nil {
		return it.Object
	}
	t := toTable(res, []api.Object{obj}, e.includeObject)
	if e.sentHeader {
		t.ColumnDefinitions = nil
	}
	e.sentHeader = true
	b, _ := json.Marshal(t)
	return b
}

// partialObject returns the JSON of an item's PartialObjectMetadata, made
// once per event for the watches of meta.k8s.io/v1 (the object's JSON if it
// cannot be read, which the cache's JSON always can).
func (e *watchEncoder) partialObject(it watchcache.Item) []byte {
	b, err := partialJSON(e.shared(it, formPartialJSON), e.partial, it.Object)
	if err != nil {
		return it.Object
	}
	return b
}

// appendFrame appends the pieces of one event to vecs: a JSON line (whose
// object is the cache's shared bytes), or a length-prefixed protobuf
// WatchEvent.
func (e *watchEncoder) appendFrame(vecs [][]byte, it watchcache.Item) [][]byte {
	if e.protobuf {
		return append(vecs, e.protobufFrame(it))
	}
	return append(vecs, framePrefix[it.Type], e.object(it), frameSuffix)
}

// writeFrame appends one event to buf.
func (e *watchEncoder) writeFrame(buf *bytes.Buffer, it watchcache.Item) {
	var pieces [3][]byte
	for _, b := range e.appendFrame(pieces[:0], it) {
		buf.Write(b)
	}
}

// protobufFrame encodes one event as a protobuf frame. An object that
// cannot be encoded becomes an ERROR event saying so.
func (e *watchEncoder) protobufFrame(it watchcache.Item) []byte {
	env, err := e.protobufObject(it)
	if err != nil {
		st := apierror.Internal(fmt.Errorf("encoding a watch event as protobuf: %w", err)).Status
		env, _ = encodeProtobuf(st)
		return protobuf.EncodeWatchEvent(api.Error, env)
	}
	return protobuf.EncodeWatchEvent(it.Type, env)
}

// protobufObject is an item's object in the protobuf envelope: encoded
// once per event and shared by every watcher (the item's Alt, or its form
// for metadata-only watches), except for the Tables and the events made
// for this watcher alone.
func (e *watchEncoder) protobufObject(it watchcache.Item) ([]byte, error) {
	encode := func() ([]byte, error) {
		obj, err := api.ParseObject(e.object(it))
		if err != nil {
			return nil, err
		}
		return protobuf.Encode(obj)
	}
	if m := e.shared(it, formPartialProtobuf); m != nil {
		return m.Get(encode)
	}
	return encode()
}

// watchSink is where a watch's events go: a chunked (or HTTP/2) response,
// or a WebSocket.
type watchSink interface {
	send(e *watchEncoder, items []watchcache.Item) error
	close()
}

// isWebSocket reports whether the client asked for a WebSocket upgrade.
func (q *request) isWebSocket() bool {
	return strings.EqualFold(q.r.Header.Get("Upgrade"), "websocket")
}

// openSink starts a streamed HTTP response through net/http, for a watch
// that cannot be detached (a WebSocket always is: watch_ws.go).
func (q *request) openSink(e *watchEncoder) (watchSink, error) {
	flusher, ok := q.w.(http.Flusher)
	if !ok {
		return nil, apierror.Internal(errNoFlush)
	}
	h := q.w.Header()
	h.Set("Content-Type", e.contentType())
	h.Set("Cache-Control", "no-cache, private")
	q.w.WriteHeader(http.StatusOK)
	flusher.Flush()
	return &httpSink{w: q.w, flusher: flusher}, nil
}

type errString string

func (e errString) Error() string { return string(e) }

const errNoFlush = errString("the response writer cannot stream")

// httpSink writes events to a streamed response: everything pending in one
// write and one flush.
type httpSink struct {
	w       http.ResponseWriter
	flusher http.Flusher
	buf     bytes.Buffer
}

func (s *httpSink) send(e *watchEncoder, items []watchcache.Item) error {
	s.buf.Reset()
	for _, it := range items {
		e.writeFrame(&s.buf, it)
	}
	if _, err := s.w.Write(s.buf.Bytes()); err != nil {
		return err
	}
	s.flusher.Flush()
	return nil
}

func (s *httpSink) close() {}
