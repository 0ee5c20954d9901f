package protobuf

import (
	"runtime"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/listwatch/listwatch/client/api"
)

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestDecodeAmplification: a schema of many empty nested schemas, three
// bytes each on the wire, costs about what the same document costs in
// JSON, two bytes each ("{},"): a message of many fields that holds none
// costs what it holds. It cost 27 times JSON's; now under 2 (under 6 with
// the race detector, whose sync.Pool drops some of what is put back).
func TestDecodeAmplification(t *testing.T) {
	const n = 100_000
	allOf := jsonSchemaProps.fields[slices.IndexFunc(jsonSchemaProps.fields, func(f field) bool { return f.name == "allOf" })].num
	var b []byte
	for range n {
		b = protowire.AppendTag(b, allOf, protowire.BytesType)
		b = protowire.AppendBytes(b, nil)
	}
	doc := `{"allOf":[{}` + strings.Repeat(`,{}`, n-1) + `]}`
	var err error
	pb := allocated(func() { _, err = decodeMessage(jsonSchemaProps, b, 1) })
	if err != nil {
		t.Fatal(err)
	}
	js := allocated(func() { _, err = api.ParseObject([]byte(doc)) })
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("protobuf: %d bytes -> %d allocated; JSON: %d bytes -> %d", len(b), pb, len(doc), js)
	if pb > 8*js {
		t.Errorf("protobuf decoding allocated %d bytes, JSON %d: want at most 8 times JSON's", pb, js)
	}
}
