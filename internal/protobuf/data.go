package protobuf

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/internal/kubespec"
)

// tables are the messages internal/kubespec's data describes.
type tables struct {
	kinds    map[string]map[string]*message // by apiVersion, then kind
	messages map[string]*message            // by fully qualified name
}

// data builds the tables on first use.
var data = sync.OnceValue(func() *tables {
	pb := kubespec.Load().Protobuf
	b := builder{data: pb.Messages, built: map[string]*message{}}
	t := &tables{kinds: map[string]map[string]*message{}, messages: b.built}
	for gvk, name := range pb.Kinds {
		i := strings.LastIndex(gvk, "/")
		apiVersion := strings.TrimPrefix(gvk[:i], "/") // the core group's "/v1"
		if t.kinds[apiVersion] == nil {
			t.kinds[apiVersion] = map[string]*message{}
		}
		m, err := b.message(name)
		if err != nil {
			panic(fmt.Sprintf("protobuf: kubespec data: %s: %v", gvk, err))
		}
		t.kinds[apiVersion][gvk[i+1:]] = m
	}
	return t
})

// metaV1 returns meta/v1's message called name, from the data.
func metaV1(name string) *message {
	m := data().messages["k8s.io.apimachinery.pkg.apis.meta.v1."+name]
	if m == nil {
		panic("protobuf: kubespec data lacks meta/v1 " + name)
	}
	return m
}

// builder makes messages from the data, each once: messages refer to
// each other, and to themselves.
type builder struct {
	data  map[string]kubespec.Message
	built map[string]*message
}

// customKinds are the messages whose Go types encode themselves.
var customKinds = map[string]kind{
	"k8s.io.apimachinery.pkg.apis.meta.v1.Time":       kTime,
	"k8s.io.apimachinery.pkg.apis.meta.v1.MicroTime":  kMicroTime,
	"k8s.io.apimachinery.pkg.apis.meta.v1.FieldsV1":   kFieldsV1,
	"k8s.io.apimachinery.pkg.api.resource.Quantity":   kQuantity,
	"k8s.io.apimachinery.pkg.util.intstr.IntOrString": kIntOrString,
	// RawExtension holds raw JSON in field 1, written only when not nil,
	// and is that JSON in the object's JSON: as apiextensions' JSON.
	"k8s.io.apimachinery.pkg.runtime.RawExtension": kJSON,
}

var scalarKinds = map[string]kind{
	"string": kString, "int32": kInt32, "int64": kInt64, "bool": kBool, "double": kDouble, "bytes": kBytes,
}

func (b *builder) message(name string) (*message, error) {
	if m, ok := b.built[name]; ok {
		return m, nil
	}
	d, ok := b.data[name]
	if !ok || d.Custom || d.Slice {
		return nil, fmt.Errorf("message %s: not a message of fields", name)
	}
	m := &message{name: name[strings.LastIndex(name, ".")+1:], typeMeta: d.TypeMeta}
	b.built[name] = m
	for _, df := range d.Fields {
		f, err := b.field(df)
		if err != nil {
			return nil, fmt.Errorf("%s.%s: %w", name, df.Name, err)
		}
		m.fields = append(m.fields, f)
	}
	// go-to-protobuf lists fields in the Go struct's order; gogo-protobuf
	// writes them in number order.
	slices.SortFunc(m.fields, func(a, b field) int { return int(a.num - b.num) })
	return m, nil
}

// field is the field df describes. encoding/json leaves out an omitempty
// scalar, slice, map or nil pointer, never a struct; an omitempty pointer
// is written whatever it points to, and a []byte is nil or not as a
// pointer.
func (b *builder) field(df kubespec.Field) (field, error) {
	f := field{name: df.Name, num: protowire.Number(df.Number), inline: df.Inline}
	if df.Label == "map" {
		return f, b.mapField(&f, df)
	}
	k, msg, err := b.kindOf(df.Type)
	if err != nil {
		return f, err
	}
	f.kind, f.msg = k, msg
	switch {
	case df.Label == "repeated":
		f.pres, f.omitZero = repeated, df.OmitEmpty
	case df.Pointer:
		f.pres, f.null = pointer, !df.OmitEmpty
		f.omitZero = k == kBytes && df.OmitEmpty
	default:
		f.omitZero = df.OmitZero || df.OmitEmpty && k.scalar()
	}
	return f, nil
}

// mapField fills in a map field: its values' kind.
func (b *builder) mapField(f *field, df kubespec.Field) error {
	f.omitZero = df.OmitEmpty
	switch df.Type {
	case "string":
		f.kind = kStringMap
		return nil
	case "bytes":
		f.kind = kBytesMap
		return nil
	}
	if d := b.data[df.Type]; d.Slice {
		if len(d.Fields) != 1 || d.Fields[0].Type != "string" {
			return fmt.Errorf("map of %s: a slice of %v", df.Type, d.Fields)
		}
		f.kind = kStringsMap
		return nil
	}
	k, msg, err := b.kindOf(df.Type)
	if err != nil {
		return err
	}
	f.kind, f.value = kMessageMap, &field{name: "value", num: 2, kind: k, msg: msg}
	return nil
}

// kindOf returns the kind of a protobuf type, and its message.
func (b *builder) kindOf(typ string) (kind, *message, error) {
	if k, ok := scalarKinds[typ]; ok {
		return k, nil, nil
	}
	if k, ok := customKinds[typ]; ok {
		return k, nil, nil
	}
	m, err := b.message(typ)
	return kMessage, m, err
}
