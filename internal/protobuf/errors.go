package protobuf

import "errors"

// Errors returned, wrapped with context, by this package's functions.
var (
	// ErrUnsupported: the apiVersion and kind are not one this package
	// encodes; a server answers 406 or 415, or serves JSON instead.
	ErrUnsupported = errors.New("protobuf: unsupported kind")
	// ErrNotProtobuf: the data lacks the "k8s\x00" prefix.
	ErrNotProtobuf = errors.New("protobuf: missing k8s\\x00 prefix")
	// ErrMalformed: the data is not a well-formed message of its type.
	ErrMalformed = errors.New("protobuf: malformed data")
	// ErrInvalid: the JSON object does not have the shape of its type.
	ErrInvalid = errors.New("protobuf: invalid object")
	// ErrNotRepresentable: a decoded value has no JSON form that would read
	// back the same (an int64 beyond ±2^53, a year outside 0 to 9999).
	ErrNotRepresentable = errors.New("protobuf: value not representable in JSON")
	// ErrTooDeep: the decoded object would nest deeper than api.MaxDepth.
	ErrTooDeep = errors.New("protobuf: nested too deep")
	// ErrFrameTooLarge: a watch frame's length exceeds the reader's limit.
	ErrFrameTooLarge = errors.New("protobuf: frame too large")
)
