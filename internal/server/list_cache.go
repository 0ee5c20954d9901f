package server

import (
	"bufio"
	"context"
	"net/http"
	"net/url"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// fromCache reports whether a list can be served from the watch cache and
// the store revision the cache must reflect first (0: any; -1: the store's
// current one). As kube-apiserver: resourceVersion=0 is "any" (the limit is
// ignored), an unset one is a consistent read, a number without a limit is
// "not older than"; exact reads and pages go to the store.
func fromCache(v url.Values, opts registry.ListOptions) (bool, int64) {
	rv := v.Get("resourceVersion")
	switch {
	case rv == "0":
		return true, 0
	case opts.Continue != "" || opts.Limit > 0 || opts.Exact:
		return false, 0
	case rv == "":
		return true, -1
	}
	return true, opts.ResourceVersion
}

// listCached serves a list from the watch cache; false means the store
// must serve it: no cache serves the request's definition (it changed
// while the request was in flight, which the store serves with the
// definition the request began with, as kube-apiserver serves a request
// with the storage it began with; or the server is closing), or the cache
// could not get fresh enough in time. Each fallback is counted
// (listwatch_watch_cache_list_fallback_total).
func (q *request) listCached(opts registry.ListOptions, fresh int64) bool {
	c := q.s.caches.get(q.res)
	if c == nil {
		return q.storeLists(metrics.FallbackNoCache)
	}
	ctx, cancel := context.WithTimeout(q.r.Context(), freshnessWait)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		return q.storeLists(metrics.FallbackNotReady)
	}
	if err := q.s.waitFresh(ctx, c, fresh); err != nil {
		if fresh > 0 {
			q.fail(err) // a resourceVersion the store has not reached: 504, as kube
			return true
		}
		return q.storeLists(metrics.FallbackStale)
	}
	objs, rev := c.List(watchcache.Filter{Namespace: q.info.Namespace, Labels: opts.Labels, Fields: opts.Fields})
	switch {
	case q.out.as == "" && q.out.mediaType == mediaProtobuf && q.writeProtobufList(q.res.APIVersion(), q.res.ListKind, objs, rev, objectProtobuf):
		return true
	case q.out.as == asPartialList && q.out.asGV == metaV1 && q.writePartialList(objs, rev):
		return true
	case q.out.as == "Table":
		q.writeCachedTable(objs, rev)
		return true
	}
	if q.out.as != "" || q.out.mediaType != mediaJSON {
		items := make([]api.Object, len(objs))
		for i, o := range objs {
			obj, err := o.Obj()
			if err != nil {
				q.fail(err)
				return true
			}
			items[i] = obj
		}
		q.writeList(api.ListMeta{ResourceVersion: formatRV(rev)}, items)
		return true
	}
	q.writeEncodedList(q.res.APIVersion(), q.res.ListKind, rev, len(objs), func(i int) []byte { return objs[i].JSON })
	return true
}

// storeLists counts a list the store serves instead of the cache, for
// reason, and returns false for listCached to say so.
func (q *request) storeLists(reason string) bool {
	q.s.metrics.ListFallback(resourceID(q.res), reason)
	return false
}

// writeEncodedList writes a JSON list of n items, item(i) the JSON of
// each (the objects' cached bytes, or their metadata's), without encoding
// any of them again, and without building the list in memory: its length
// is known from the items', and it goes out through a pooled buffer of
// listWriteBuffer bytes.
func (q *request) writeEncodedList(apiVersion, listKind string, rev int64, n int, item func(int) []byte) {
	head := `{"apiVersion":` + strconv.Quote(apiVersion) + `,"kind":` + strconv.Quote(listKind) +
		`,"metadata":{"resourceVersion":"` + formatRV(rev) + `"},"items":[`
	const tail = "]}\n"
	size := len(head) + len(tail) + max(n-1, 0) // the commas
	for i := range n {
		size += len(item(i))
	}
	h := q.w.Header()
	h.Set("Content-Type", mediaJSON)
	h.Set("Content-Length", strconv.Itoa(size))
	q.w.WriteHeader(http.StatusOK)
	bw := listWriters.Get().(*bufio.Writer)
	bw.Reset(q.w)
	defer func() { bw.Reset(nil); listWriters.Put(bw) }()
	_, _ = bw.WriteString(head)
	for i := range n {
		if i > 0 {
			_ = bw.WriteByte(',')
		}
		_, _ = bw.Write(item(i))
	}
	_, _ = bw.WriteString(tail)
	_ = bw.Flush()
}

// listWriteBuffer is the size of the writes of an encoded list: many
// objects per write syscall, and small enough to pool, where one buffer
// of the whole list (13 MB for 10,000 objects of 1 KiB) was allocated,
// zeroed and grown per request.
const listWriteBuffer = 64 << 10

var listWriters = sync.Pool{New: func() any { return bufio.NewWriterSize(nil, listWriteBuffer) }}

// writeProtobufList writes a protobuf list from the objects' protobuf
// encodings (env: of each object, or of its metadata), each made once per
// object and shared with the watches (the object's Alt, or its form), so
// listing for client-go's informers costs a copy per object, not a decode
// and an encode. False means an object could not be encoded and the caller
// must take the generic path (which reports why).
func (q *request) writeProtobufList(apiVersion, listKind string, objs []*watchcache.Object, rev int64, env func(*watchcache.Object) ([]byte, error)) bool {
	items := make([][]byte, len(objs))
	for i, o := range objs {
		b, err := env(o)
		if err != nil {
			return false
		}
		items[i] = b
	}
	b, err := protobuf.EncodeList(apiVersion, listKind, formatRV(rev), "", items)
	if err != nil {
		return false
	}
	h := q.w.Header()
	h.Set("Content-Type", mediaProtobuf)
	h.Set("Content-Length", strconv.Itoa(len(b)))
	q.w.WriteHeader(http.StatusOK)
	_, _ = q.w.Write(b)
	return true
}

// objectProtobuf is an object's protobuf, made once (its Alt).
func objectProtobuf(o *watchcache.Object) ([]byte, error) {
	return o.Alt.Get(func() ([]byte, error) {
		obj, err := o.Obj()
		if err != nil {
			return nil, err
		}
		return protobuf.Encode(obj)
	})
}
