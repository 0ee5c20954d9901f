package server

import (
	"fmt"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
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
// the object's form for a list, or the list's for an object. Kube names the
// Go type it holds; ours is named the same way for the built-in kinds.
func partialMismatch(res *resource.Resource, list bool) error {
	if list {
		return apierror.NotAcceptableForm(fmt.Sprintf("you requested %s, but the requested object is a list (*%s.%s)", asPartial, res.Version, res.ListKind))
	}
	return apierror.NotAcceptableForm(fmt.Sprintf("you requested %s, but the requested object is not a list (*%s.%s)", asPartialList, res.Version, res.Kind))
}

// partialList is the PartialObjectMetadataList of items in apiVersion gv.
func partialList(gv string, meta api.ListMeta, items []api.Object) objectList {
	l := objectList{api.TypeMeta{APIVersion: gv, Kind: asPartialList}, meta, make([]api.Object, len(items))}
	for i, obj := range items {
		l.Items[i] = partialObject(gv, obj)
	}
	return l
}
