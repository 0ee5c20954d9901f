package client

import (
	"bytes"
	"io"
	"slices"
	"testing"
)

// scriptedReader returns its reads in turn, recording the size of the
// buffer each read was given.
type scriptedReader struct {
	reads [][]byte
	sizes []int
}

func (r *scriptedReader) Read(p []byte) (int, error) {
	r.sizes = append(r.sizes, len(p))
	if len(r.reads) == 0 {
		return 0, io.EOF
	}
	n := copy(p, r.reads[0])
	if r.reads[0] = r.reads[0][n:]; len(r.reads[0]) == 0 {
		r.reads = r.reads[1:]
	}
	return n, nil
}

// TestDrainReaderBuffers: a watch reads with the small buffer until a read
// fills it, with a large one while reads fill it (a burst), and waits for
// its next event with the small one again; every byte comes through in
// order.
func TestDrainReaderBuffers(t *testing.T) {
	burst := bytes.Repeat([]byte("b"), 3*itemBatchBytes)
	src := &scriptedReader{reads: [][]byte{[]byte("event 1\n"), burst, []byte("event 2\n"), []byte("event 3\n")}}
	d := newDrainReader(src)
	got, err := io.ReadAll(d)
	if err != nil {
		t.Fatal(err)
	}
	if want := "event 1\n" + string(burst) + "event 2\nevent 3\n"; string(got) != want {
		t.Fatalf("read %d bytes, not the %d sent in order", len(got), len(want))
	}
	small, large := smallReadBytes, itemBatchBytes
	want := []int{
		small,               // event 1: a small read
		small,               // the burst fills the small buffer...
		large, large, large, // ... then large ones (3 x 64 KiB - 4 KiB: the last one is not full)
		small, small, small, // event 2, event 3, EOF: back to the small buffer
	}
	if !slices.Equal(src.sizes, want) {
		t.Errorf("read buffer sizes %v, want %v", src.sizes, want)
	}
}
