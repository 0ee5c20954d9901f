package protobuf

import (
	"bytes"
	"testing"
)

// FuzzDecode checks that Decode never panics, that what it decodes encodes
// again, and that one Decode-Encode cycle reaches a fixed point.
func FuzzDecode(f *testing.F) {
	for _, doc := range docs {
		data, err := Encode(parse(f, doc))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		obj, err := Decode(data)
		if err != nil {
			return
		}
		once, err := Encode(obj)
		if err != nil {
			t.Fatalf("Encode(Decode(data)): %v\nobject: %v", err, obj)
		}
		obj, err = Decode(once)
		if err != nil {
			t.Fatalf("Decode(Encode(Decode(data))): %v", err)
		}
		twice, err := Encode(obj)
		if err != nil {
			t.Fatalf("second Encode: %v", err)
		}
		if !bytes.Equal(once, twice) {
			t.Fatalf("no fixed point:\n once %x\ntwice %x", once, twice)
		}
	})
}
