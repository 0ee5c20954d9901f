package server

import (
	"encoding/json"
	"fmt"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream"
)

// watchEncoder turns items into the bytes of one event each. JSON events
// reuse the cached object bytes: only the envelope around them is written
// per watcher. It keeps nothing of the request, so that a stream that
// outlives its handler (a detached watch: internal/watchstream) does not
// keep net/http's buffers alive.
type watchEncoder struct {
	res           *resource.Resource
	includeObject string // the Table's includeObject parameter
	table         bool   // kubectl get -w: each object as a one-row Table
	protobuf      bool   // length-prefixed protobuf WatchEvents
	// partial is the apiVersion of the PartialObjectMetadata each object
	// is sent as, "" to send the objects.
	partial    string
	sentHeader bool
}

var _ watchstream.Encoder = (*watchEncoder)(nil)

func (q *request) watchEncoder() *watchEncoder {
	e := &watchEncoder{
		res: q.res, includeObject: q.r.URL.Query().Get("includeObject"),
		table: q.out.as == "Table", protobuf: q.out.mediaType == mediaProtobuf,
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

// AppendFrame appends the pieces of one event to vecs: a JSON line (whose
// object is the cache's shared bytes), or a length-prefixed protobuf
// WatchEvent.
func (e *watchEncoder) AppendFrame(vecs [][]byte, it watchcache.Item) [][]byte {
	if e.protobuf {
		return append(vecs, e.protobufFrame(it))
	}
	return watchstream.AppendJSONEvent(vecs, it.Type, e.object(it))
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

// streamOptions are the watch's options for the engine.
func (q *request) streamOptions(wr watchRequest) watchstream.Options {
	enc := q.watchEncoder()
	return watchstream.Options{
		Encoder: enc, ContentType: enc.contentType(), Protobuf: enc.protobuf,
		Plain:     !enc.protobuf && !enc.table && enc.partial == "",
		Laneable:  q.out.as == "" && !enc.protobuf,
		Bookmarks: wr.bookmarks, WebSocket: wr.ws,
		Metrics: q.s.metrics.Resource(resourceID(q.res)),
	}
}
