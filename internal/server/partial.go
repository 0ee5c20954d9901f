package server

import (
	"encoding/json"
	"fmt"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// The metadata-only forms (meta.k8s.io PartialObjectMetadata and its list)
// that client-go's metadata client and controller-runtime's OnlyMetadata
// watches ask for, as in
// "Accept: application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1":
// every resource answers them, on every verb, as kube-apiserver's
// transformObject does.
const (
	asPartial     = "PartialObjectMetadata"
	asPartialList = "PartialObjectMetadataList"
	metaV1        = "meta.k8s.io/v1"
)

// partialOK accepts the metadata-only forms as kube-apiserver's
// RequestScope.AllowsMediaTypeTransform does: in meta.k8s.io v1 or v1beta1,
// in every media type (protobuf too, custom resources included), either form
// on any verb; one that does not fit the answer is 406 when it is made.
func partialOK(as, group, version string) bool {
	return (as == asPartial || as == asPartialList) && group == "meta.k8s.io" && (version == "v1" || version == "v1beta1")
}

// partial reports whether the output is a metadata-only form.
func (o output) partial() bool { return o.as == asPartial || o.as == asPartialList }

// partialObject is obj's PartialObjectMetadata in apiVersion gv.
func partialObject(gv string, obj api.Object) api.Object {
	return api.Object{"apiVersion": gv, "kind": asPartial, "metadata": obj.Metadata()}
}

// partialMismatch is kube's 406 for a form that does not fit the answer:
// the object's form for a list, or the list's for an object, naming the Go
// type kube holds it in (k8s.io/api's, unstructured for custom resources).
func partialMismatch(res *resource.Resource, list bool) error {
	pkg, kind := res.Version, res.Kind
	if res.Owner != "" {
		pkg, kind = "unstructured", "Unstructured"
	}
	if list {
		return apierror.NotAcceptableForm(fmt.Sprintf("you requested %s, but the requested object is a list (*%s.%sList)", asPartial, pkg, kind))
	}
	return apierror.NotAcceptableForm(fmt.Sprintf("you requested %s, but the requested object is not a list (*%s.%s)", asPartialList, pkg, kind))
}

// partialList is the PartialObjectMetadataList of items in apiVersion gv.
func partialList(gv string, meta api.ListMeta, items []api.Object) objectList {
	l := objectList{api.TypeMeta{APIVersion: gv, Kind: asPartialList}, meta, make([]api.Object, len(items))}
	for i, obj := range items {
		l.Items[i] = partialObject(gv, obj)
	}
	return l
}

// The further encodings of an item (watchcache.Encoded.Form) that the
// watches and the lists from the cache share: the meta.k8s.io/v1
// PartialObjectMetadata, in JSON and in protobuf. (v1beta1's, which no
// client of kube's asks for, is made per request.)
const (
	formPartialJSON = iota
	formPartialProtobuf
)

// partialJSON returns the JSON of the PartialObjectMetadata (in gv) of an
// object's JSON, made once in m unless m is nil.
func partialJSON(m *watchcache.Encoded, gv string, object []byte) ([]byte, error) {
	encode := func() ([]byte, error) {
		obj, err := api.ParseObject(object)
		if err != nil {
			return nil, err
		}
		return json.Marshal(partialObject(gv, obj))
	}
	if m == nil {
		return encode()
	}
	return m.Get(encode)
}

// partialSplice is the JSON of the PartialObjectMetadata (in gv) of an
// object's JSON, as json.Marshal gives it (keys sorted), from the bytes of
// its metadata without decoding them; false if it has no metadata object.
func partialSplice(gv string, object []byte) ([]byte, bool) {
	md, ok := registry.Metadata(object)
	if !ok || len(md) == 0 || md[0] != '{' {
		return nil, false
	}
	const kind = `","kind":"` + asPartial + `","metadata":`
	b := make([]byte, 0, len(`{"apiVersion":"`)+len(gv)+len(kind)+len(md)+1)
	b = append(b, `{"apiVersion":"`...)
	b = append(b, gv...)
	b = append(b, kind...)
	b = append(b, md...)
	return append(b, '}'), true
}

// writePartialList writes the meta.k8s.io/v1 PartialObjectMetadataList of
// objects from the cache, in JSON or protobuf, from each object's forms,
// made once and shared with the watches. False means writeList must.
func (q *request) writePartialList(objs []*watchcache.Object, rev int64) bool {
	switch q.out.mediaType {
	case mediaProtobuf:
		return q.writeProtobufList(metaV1, asPartialList, objs, rev, func(o *watchcache.Object) ([]byte, error) {
			return o.Alt.Form(formPartialProtobuf).Get(func() ([]byte, error) {
				b, err := partialJSON(o.Alt.Form(formPartialJSON), metaV1, o.JSON)
				if err != nil {
					return nil, err
				}
				obj, err := api.ParseObject(b)
				if err != nil {
					return nil, err
				}
				return protobuf.Encode(obj)
			})
		})
	case mediaJSON:
		items := make([][]byte, len(objs))
		for i, o := range objs {
			b, err := partialJSON(o.Alt.Form(formPartialJSON), metaV1, o.JSON)
			if err != nil {
				return false
			}
			items[i] = b
		}
		q.writeEncodedList(metaV1, asPartialList, rev, len(items), func(i int) []byte { return items[i] })
		return true
	}
	return false
}
