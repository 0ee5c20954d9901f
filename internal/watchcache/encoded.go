package watchcache

import "sync"

// Encoded memoises a second encoding of an item's object (the server's
// protobuf): made once, by the first watcher that needs it, and shared by
// every other, as the JSON is.
type Encoded struct {
	once sync.Once
	b    []byte
	err  error
}

// Get returns the encoding, made by encode the first time.
func (e *Encoded) Get(encode func() ([]byte, error)) ([]byte, error) {
	e.once.Do(func() { e.b, e.err = encode() })
	return e.b, e.err
}
