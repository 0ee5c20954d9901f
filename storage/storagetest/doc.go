// Package storagetest is the conformance suite every storage.Interface
// implementation passes, and the watch-guarantee validators that the tests of
// the watch cache, the server and the client reuse on every recorded stream.
//
// A backend proves itself with one call:
//
//	func TestConformance(t *testing.T) {
//		storagetest.Run(t, func(t testing.TB) storage.Interface { return newStore(t) })
//	}
//
// newStore must return an empty store with a history of its own (no other
// writer, nothing compacted) and may register its own cleanup; the suite
// closes each store it is given, and closing twice must be harmless.
//
// The validators (ValidateOrdered, ValidateUnique, ValidateAtomic,
// ValidateReliable, ValidateResumable, and ValidateWatch for all of them)
// take Records: a stream reduced to event type, key and revision.
package storagetest
