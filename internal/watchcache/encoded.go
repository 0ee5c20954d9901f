package watchcache

import (
	"sync"
	"sync/atomic"
)

// Encoded memoises a second encoding of an item's object (the server's
// protobuf): made once, by the first watcher that needs it, and shared by
// every other, as the JSON is.
type Encoded struct {
	once sync.Once
	b    []byte
	err  error
	// acct, set before the item is seen (for an event the ring holds), is
	// charged the encoding's bytes once made, unless released first: size
	// is what it was charged, or -1 once released.
	acct *altAccount
	size atomic.Int64
}

// Get returns the encoding, made by encode the first time.
func (e *Encoded) Get(encode func() ([]byte, error)) ([]byte, error) {
	e.once.Do(func() {
		e.b, e.err = encode()
		if n := int64(len(e.b)); e.acct != nil && n > 0 && e.size.CompareAndSwap(0, n) {
			e.acct.charge(n)
		}
	})
	return e.b, e.err
}

// charged returns the bytes the encoding is charged for now.
func (e *Encoded) charged() int64 { return max(e.size.Load(), 0) }

// release stops charging the encoding and returns what it was charged.
func (e *Encoded) release() int64 { return max(e.size.Swap(-1), 0) }
