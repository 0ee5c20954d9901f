// Package kubespec is kube's published API: the discovery and the OpenAPI
// v3 schemas of the group-versions a kube-apiserver serves by default, as
// kube's own files (k8s.io/kubernetes api/discovery and api/openapi-spec/v3)
// have them, and the protobuf messages of their kinds, as the generated.proto
// files and Go types of k8s.io/api, k8s.io/kube-aggregator and
// k8s.io/apimachinery at the matching version say. The data is generated
// (gen, by `go generate`) into spec.json.gz and never edited by hand; it
// records the modules, versions and hashes it came from.
//
// Loading is lazy: the file is decoded on the first call, and each schema
// when it is first asked for. Every function is safe for concurrent use;
// the values returned are shared and must not be modified.
package kubespec

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/client/api"
)

//go:generate go run ./gen -o spec.json.gz

//go:embed spec.json.gz
var data []byte

// Spec is the data file's content.
type Spec struct {
	Source Source
	// GroupVersions are the served group-versions' discovery documents,
	// sorted as kube's file names ("api__v1", then "apis__<group>__<v>").
	GroupVersions []api.APIResourceList
	// Groups are the API groups in the order kube-apiserver's /apis lists
	// them (api/discovery/apis.json: by their discovery priority, not by
	// name), alpha-only groups among them.
	Groups []string
	// Schemas are components.schemas of the group-versions' OpenAPI v3
	// documents, by definition name; a definition several documents share
	// is the core group's form (they differ only in the
	// x-kubernetes-group-version-kind each lists).
	Schemas map[string]json.RawMessage
	// Kinds name the definition of each kind, by "group/version/Kind" (as
	// their x-kubernetes-group-version-kind say).
	Kinds map[string]string
	// Protobuf is the protobuf form of the served kinds.
	Protobuf Protobuf
}

// Protobuf is what kube's generated.proto files and the Go types they were
// generated from say of the served kinds' protobuf form and its JSON
// counterpart.
type Protobuf struct {
	Sources []Source // the modules read: k8s.io/api, k8s.io/apimachinery...
	// Kinds name the message of each kind, by "group/version/Kind".
	Kinds map[string]string
	// Messages are the kinds' messages and every message they use, by
	// fully qualified name ("k8s.io.api.core.v1.Pod").
	Messages map[string]Message
}

// Message is a protobuf message and the Go type it was generated from.
type Message struct {
	Fields []Field `json:"fields,omitempty"`
	// Slice says the Go type is a named slice (go-to-protobuf's
	// +protobuf.nullable=true): the JSON is the array of its one field.
	Slice bool `json:"slice,omitempty"`
	// Custom says the Go type has its own protobuf and JSON encodings
	// (meta/v1 Time, resource.Quantity, intstr.IntOrString...): its fields
	// are not listed.
	Custom bool `json:"custom,omitempty"`
	// TypeMeta says the Go type embeds meta/v1 TypeMeta: the JSON may
	// carry apiVersion and kind, which protobuf leaves to the envelope.
	TypeMeta bool `json:"typeMeta,omitempty"`
}

// Field is a message's field and the Go struct field it was generated from.
type Field struct {
	Name   string `json:"name"` // the JSON name; an inline field's protobuf name
	Number int    `json:"number"`
	// Type is a protobuf scalar type (string, int32, int64, bool, double,
	// bytes) or a message's fully qualified name; for a map, its values'.
	Type string `json:"type"`
	// Label is "optional", "repeated" or "map" (keys are strings).
	Label     string `json:"label"`
	Pointer   bool   `json:"pointer,omitempty"`   // a Go pointer
	OmitEmpty bool   `json:"omitEmpty,omitempty"` // json:",omitempty"
	OmitZero  bool   `json:"omitZero,omitempty"`  // json:",omitzero"
	Inline    bool   `json:"inline,omitempty"`    // json:",inline" or embedded: its fields are the object's own
}

// Source says where the data came from.
type Source struct {
	Module, Version string
	Sum             string   // the module's go.sum hash
	Files           []string // read from the module, in order
}

var load = sync.OnceValues(func() (*Spec, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	var s Spec
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	return &s, nil
})

// Load returns the data. It fails only if the embedded file is corrupt,
// which the package's tests rule out.
func Load() *Spec {
	s, err := load()
	if err != nil {
		panic(fmt.Sprintf("kubespec: the embedded data: %v", err))
	}
	return s
}

// schemas caches the decoded definitions, by name.
var schemas sync.Map // string -> map[string]any

// Schema returns the definition called name, decoded, or nil.
func Schema(name string) map[string]any {
	if v, ok := schemas.Load(name); ok {
		return v.(map[string]any)
	}
	raw, ok := Load().Schemas[name]
	if !ok {
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		panic(fmt.Sprintf("kubespec: definition %s: %v", name, err))
	}
	v, _ := schemas.LoadOrStore(name, m)
	return v.(map[string]any)
}

// Definitions returns the decoded definitions, all of them, by name. The
// map is new; its values are shared.
func Definitions() map[string]map[string]any {
	out := make(map[string]map[string]any, len(Load().Schemas))
	for name := range Load().Schemas {
		out[name] = Schema(name)
	}
	return out
}

// DefinitionName returns the name of the definition of a kind, or "".
func DefinitionName(group, version, kind string) string {
	return Load().Kinds[group+"/"+version+"/"+kind]
}

// OmitEmpty returns the properties of the definition called name that its
// Go type leaves out of its JSON when empty (json:",omitempty" on a
// string, number, bool, slice or map; not on a pointer or struct), by JSON
// name, the fields of inline members included; nil when the definition
// has no Go type here.
func OmitEmpty(name string) map[string]bool {
	msgs := Load().Protobuf.Messages
	msg, ok := msgs["k8s.io."+strings.ReplaceAll(strings.TrimPrefix(name, "io.k8s."), "-", "_")]
	if !ok {
		return nil
	}
	out := map[string]bool{}
	var add func(fields []Field)
	add = func(fields []Field) {
		for _, f := range fields {
			switch {
			case f.Inline:
				add(msgs[f.Type].Fields)
			case f.OmitEmpty && !f.Pointer && (f.Label != "optional" || scalarTypes[f.Type] || msgs[f.Type].Slice):
				out[f.Name] = true
			}
		}
	}
	add(msg.Fields)
	return out
}

// scalarTypes are the protobuf types of Go strings, numbers, bools and
// byte slices.
var scalarTypes = map[string]bool{"string": true, "bytes": true, "bool": true, "int32": true, "int64": true,
	"uint32": true, "uint64": true, "double": true, "float": true}
