package sockwrite

import "testing"

// TestReuse: a slice whose array is at most MaxKeptBytes is kept, emptied;
// one past it is dropped; the element's size counts, not the length.
func TestReuse(t *testing.T) {
	bytes := make([]byte, 10, MaxKeptBytes)
	if got := Reuse(bytes); len(got) != 0 || cap(got) != MaxKeptBytes {
		t.Errorf("a %d-byte array: Reuse gave len %d cap %d, want it kept, emptied", MaxKeptBytes, len(got), cap(got))
	}
	if got := Reuse(make([]byte, 0, MaxKeptBytes+1)); got != nil {
		t.Errorf("a %d-byte array was kept", MaxKeptBytes+1)
	}
	pieces := make([][]byte, 1, MaxKeptBytes/24) // a slice header is 24 bytes on 64-bit systems, 12 on 32-bit
	if got := Reuse(pieces); got == nil || len(got) != 0 {
		t.Errorf("%d pieces of %d bytes' array were not kept", cap(pieces), MaxKeptBytes)
	}
	if got := Reuse(make([][]byte, 0, MaxKeptBytes)); got != nil {
		t.Errorf("%d pieces (more than %d bytes) were kept", MaxKeptBytes, MaxKeptBytes)
	}
}
