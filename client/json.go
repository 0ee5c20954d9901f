package client

import (
	"fmt"
	"io"

	json "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Lists and watch streams are decoded with github.com/go-json-experiment/json,
// the code of Go's encoding/json/v2 (which the standard library builds only
// under GOEXPERIMENT=jsonv2), about three times as fast as encoding/json on
// Kubernetes objects. It runs with encoding/json's semantics
// (jsonv1.DefaultOptionsV1): member names match case-insensitively, unknown
// members are ignored, duplicate names and invalid UTF-8 are accepted, and
// UnmarshalJSON methods (resource.Quantity, metav1.Time, IntOrString) are
// called with the value's bytes; so a type decodes as json.Unmarshal would
// decode it.
var jsonOptions = jsonv1.DefaultOptionsV1()

// fastOptions are jsonOptions but for legacy error reporting, which scans
// every value once more before decoding it and treats a few faults in a
// type's definition (conflicting names, a name matching several fields
// but for case) as errors to report at the end rather than ambiguities to
// resolve. Where decoding with them succeeds, it decodes what jsonOptions
// decode; where it fails, unmarshal decodes again with jsonOptions.
var fastOptions = json.JoinOptions(jsonOptions, jsonv1.ReportErrorsWithLegacySemantics(false))

// unmarshal decodes one JSON value, raw, which the caller has read whole
// (so it is valid JSON), into v, as encoding/json would.
func unmarshal[T any](raw []byte, v *T) error {
	if json.Unmarshal(raw, v, fastOptions) == nil {
		return nil
	}
	var zero T
	*v = zero
	return json.Unmarshal(raw, v, jsonOptions)
}

// newJSONDecoder returns a decoder of the JSON values r holds, one after
// another.
func newJSONDecoder(r io.Reader) *jsontext.Decoder {
	return jsontext.NewDecoder(r, jsonOptions)
}

// decodeValue decodes dec's next value into v. The value is read whole
// first, so that a stream cut inside it fails with io.ErrUnexpectedEOF and
// a broken connection with its own error, not as a syntax error.
func decodeValue[T any](dec *jsontext.Decoder, v *T) error {
	raw, err := dec.ReadValue()
	if err != nil {
		return err
	}
	return unmarshal(raw, v)
}

// readDelim reads the next token, which must be the delimiter want.
func readDelim(dec *jsontext.Decoder, want jsontext.Kind) error {
	tok, err := dec.ReadToken()
	if err != nil {
		return err
	}
	if tok.Kind() != want {
		return fmt.Errorf("want %v, got %v", want, tok.Kind())
	}
	return nil
}

// readName reads the name of an object's next member.
func readName(dec *jsontext.Decoder) (string, error) {
	tok, err := dec.ReadToken()
	if err != nil {
		return "", err
	}
	return tok.String(), nil
}
