package sockwrite

import "unsafe"

// MaxKeptBytes bounds the array of a slice that a connection keeps
// between writes (its pieces, headers, items, pending bytes: Reuse), so
// that a busy one allocates none per write and an idle one holds little:
// a large write's array goes to the collector.
const MaxKeptBytes = 8 << 10

// Reuse returns s emptied, to be appended to by the next write, if its
// array is at most MaxKeptBytes, else nil. Clear a slice of pointers
// first, so that what it held is not kept alive.
func Reuse[T any](s []T) []T {
	var zero T
	if uintptr(cap(s))*unsafe.Sizeof(zero) > MaxKeptBytes {
		return nil
	}
	return s[:0]
}
