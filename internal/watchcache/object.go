package watchcache

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"unique"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage"
)

// Object is one object as the cache holds it: encoded once for the wire,
// with what filters test read from it once. It is never modified once made.
type Object struct {
	Key  string
	Rev  int64
	JSON []byte  // the object's JSON with metadata.resourceVersion = Rev
	Alt  Encoded // another encoding of JSON, made on demand
	// ns is read once: filters test it per object per list and per watcher
	// per event, where two map lookups each showed in profiles, and then
	// comparing a thousand watchers' copies of the name.
	ns     unique.Handle[string]
	labels map[string]string
	fields map[string]string

	// The decoded object is not kept: the ring holds every event's object,
	// mostly superseded ones nothing asks for again, and a decoded 1 KiB
	// ConfigMap is 3.8 KB of maps more for the GC to scan. Nor is it made
	// for the above when the codec can encode without it. Obj decodes JSON
	// on each call.
	decode func(context.Context, storage.KV) (api.Object, error)
}

// Obj returns the object decoded from its JSON, for what needs more than
// the JSON: Tables, protobuf, DELETED content. It decodes on every call
// (each call's tree is new) and keeps nothing, so that a Table or protobuf LIST (the rarer clients) does
// not leave every object of the resource holding its tree; the watch path
// calls it at most once per event (Event.DeletedJSON; a protobuf watch's
// encoding is made once per event, in Alt).
//
// Its JSON is in the cache's form already: decoding it converts nothing
// (a conversion webhook is not called), so it needs no caller's context.
func (o *Object) Obj() (api.Object, error) {
	return o.decode(context.Background(), storage.KV{Key: o.Key, Value: o.JSON, ModRevision: o.Rev})
}

// Namespace is the object's metadata.namespace.
func (o *Object) Namespace() string { return o.ns.Value() }

// Labels are the object's labels.
func (o *Object) Labels() map[string]string { return o.labels }

// Fields are the object's selectable fields.
func (o *Object) Fields() map[string]string { return o.fields }

// Codec turns stored values into objects and says which fields a field
// selector can test. The server supplies it per resource.
type Codec struct {
	// Decode returns the object a stored KV holds, with its resourceVersion.
	// The cache also gives it an object's JSON as a KV's value, to decode
	// the object again when it is asked for. ctx is the cache's, or a
	// replaying watcher's: a conversion it makes ends with it. An error
	// that is an *Unconvertible is not the value's fault (see there).
	Decode func(ctx context.Context, kv storage.KV) (api.Object, error)
	// Fields are the selectable fields, each the path of a scalar in the
	// object ({"metadata", "name"}) read as selector.FieldValue does; a
	// missing or mistyped one reads as "".
	Fields map[string][]string
	// Fallbacks name, for a field that reads "", the field whose value it
	// takes instead (kube's events: source, else the reporting controller).
	Fallbacks map[string]string
	// Defaults name, for a field that reads "" after its fallback, the
	// value it takes instead (kube's "0" for an absent count).
	Defaults map[string]string
	// Encode, if set, returns the JSON of the object a stored KV holds (what
	// json.Marshal of Decode's result gives) straight from the stored bytes,
	// or false when it cannot. With it, an object is not decoded at all
	// until something asks for it: the fields and labels filters test are
	// read from the JSON.
	Encode func(kv storage.KV) ([]byte, bool)
}

// Unconvertible is a Codec.Decode error for a sound stored value that
// cannot be turned into the cache's form now: a CustomResourceDefinition's
// conversion webhook failed. Where a value that cannot be decoded is
// skipped, as if deleted, this one stops the cache where it is: its
// watchers end with Err, it serves no list or watch, and it retries
// (with backoff) until the value converts, as kube's watch cache retries
// its storage watch on the error event a failed conversion makes.
type Unconvertible struct{ Err error }

func (e *Unconvertible) Error() string { return e.Err.Error() }
func (e *Unconvertible) Unwrap() error { return e.Err }

// codec is a Codec with its fields' reader.
type codec struct {
	Codec
	fields *fieldReader
}

func (c Codec) compile() *codec { return &codec{Codec: c, fields: newFieldReader(c.Fields)} }

func (c *codec) object(ctx context.Context, kv storage.KV) (*Object, error) {
	var b []byte
	encoded := c.Encode != nil
	if encoded {
		b, encoded = c.Encode(kv)
	}
	if encoded {
		if a, ok := c.fields.fromJSON(b); ok {
			return c.newObject(kv, b, a), nil
		}
	}
	obj, err := c.Decode(ctx, kv)
	if err != nil {
		return nil, err
	}
	if !encoded {
		if b, err = api.MarshalObject(obj); err != nil {
			return nil, fmt.Errorf("encoding %s: %w", kv.Key, err)
		}
	}
	return c.newObject(kv, b, c.fields.fromObject(obj)), nil
}

// Fill gives the fields of fields that read "" their fallback's value,
// then their default, as the cache does after reading the paths.
func (c Codec) Fill(fields map[string]string) {
	for f, from := range c.Fallbacks {
		if fields[f] == "" {
			fields[f] = fields[from]
		}
	}
	for f, v := range c.Defaults {
		if fields[f] == "" {
			fields[f] = v
		}
	}
}

func (c *codec) newObject(kv storage.KV, b []byte, a attrs) *Object {
	c.Fill(a.fields)
	return &Object{
		Key: kv.Key, Rev: kv.ModRevision, JSON: b, decode: c.Decode,
		ns: unique.Make(a.ns), labels: a.labels, fields: a.fields,
	}
}

// Event is one change as the cache dispatches it.
type Event struct {
	Rev  int64
	Key  string
	Cur  *Object // nil for a delete
	Prev *Object // nil for a create

	deletedOnce sync.Once
	deleted     []byte  // Prev's JSON at the event's revision, made once on demand
	deletedAlt  Encoded // another encoding of deleted
}

// DeletedJSON is the previous object with resourceVersion set to the
// event's revision, as DELETED events carry it. Prev's JSON was decoded
// once already, so decoding it again does not fail; were it to, the
// previous content goes out as it was, at its own revision.
func (e *Event) DeletedJSON() []byte {
	e.deletedOnce.Do(func() {
		e.deleted = e.Prev.JSON
		if prev, err := e.Prev.Obj(); err == nil {
			if b, err := api.MarshalObject(shallowWithRV(prev, e.Rev)); err == nil {
				e.deleted = b
			}
		}
	})
	return e.deleted
}

// shallowWithRV returns a copy of obj sharing everything but metadata,
// whose resourceVersion is rev.
func shallowWithRV(obj api.Object, rev int64) api.Object {
	out := make(api.Object, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	md := make(map[string]any, len(obj.Metadata())+1)
	for k, v := range obj.Metadata() {
		md[k] = v
	}
	md["resourceVersion"] = strconv.FormatInt(rev, 10)
	out["metadata"] = md
	return out
}
