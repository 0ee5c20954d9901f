package protobuf

import "testing"

// BenchmarkEncode encodes a Namespace with every ObjectMeta field set: the
// server's cost per object written to a protobuf watcher or list.
func BenchmarkEncode(b *testing.B) {
	obj := parse(b, docs["namespace"])
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Encode(obj); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode decodes the same Namespace: the server's cost per
// protobuf request body.
func BenchmarkDecode(b *testing.B) {
	data, err := Encode(parse(b, docs["namespace"]))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Decode(data); err != nil {
			b.Fatal(err)
		}
	}
}
