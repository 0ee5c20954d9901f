package server

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// protobufFor reports whether res's objects and lists have a protobuf form
// (the built-in kinds client-go's typed clients send as protobuf).
func protobufFor(res *resource.Resource) bool {
	return protobuf.Supports(res.APIVersion(), res.Kind)
}

// encodeProtobuf encodes any response value in Kubernetes' protobuf envelope.
func encodeProtobuf(v any) ([]byte, error) {
	obj, ok := v.(api.Object)
	if !ok {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		if obj, err = api.ParseObject(b); err != nil {
			return nil, err
		}
	}
	return protobuf.Encode(obj)
}

// decodeProtobuf decodes a protobuf request body into an object. With kind
// set, a body of another kind is not decoded: its apiVersion and kind
// alone come back, for the caller's type check to refuse.
func decodeProtobuf(b []byte, kind string) (api.Object, error) {
	if kind != "" {
		if av, k, err := protobuf.Kind(b); err == nil && k != kind {
			return api.Object{"apiVersion": av, "kind": k}, nil
		}
	}
	m, err := protobuf.Decode(b)
	if errors.Is(err, protobuf.ErrUnsupported) {
		// A kind with no protobuf form here (custom resources, and the
		// built-ins without one yet): kube answers 415 for such a body.
		return nil, apierror.UnsupportedMediaType([]string{mediaJSON, mediaYAML})
	}
	if err != nil {
		return nil, apierror.BadRequest(fmt.Sprintf("the body is not a valid protobuf object: %v", err))
	}
	return api.Object(m), nil
}
