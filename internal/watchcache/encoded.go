package watchcache

import (
	"sync"
	"sync/atomic"
)

// Encoded memoises a second encoding of an item's object (the server's
// protobuf): made once, by the first watcher that needs it, and shared by
// every other, as the JSON is. It holds Forms further encodings of the same
// object (the server's metadata-only forms), made the same way: their memos
// are allocated by the first watcher that asks for one, so that an item
// no such watcher sees pays a nil pointer for them.
type Encoded struct {
	once sync.Once
	b    []byte
	err  error
	// acct, set before the item is seen (for an event the ring holds), is
	// charged the encoding's bytes once made, unless released first: size
	// is what it was charged, or -1 once released.
	acct *altAccount
	size atomic.Int64
	// forms are the further encodings' memos, charged to acct too; once
	// released it is releasedForms.
	forms atomic.Pointer[[Forms]Encoded]
}

// Forms is how many further encodings an Encoded can hold (Form).
const Forms = 2

// releasedForms marks the forms of a released Encoded: the memos asked for
// then are made anew each time and charged to nothing.
var releasedForms [Forms]Encoded

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

// Form returns the memo of further encoding i (0 <= i < Forms), whose Form
// must not be called.
func (e *Encoded) Form(i int) *Encoded {
	f := e.forms.Load()
	if f == nil {
		n := new([Forms]Encoded)
		for j := range n {
			n[j].acct = e.acct
		}
		if e.forms.CompareAndSwap(nil, n) {
			f = n
		} else {
			f = e.forms.Load()
		}
	}
	if f == &releasedForms {
		return new(Encoded)
	}
	return &f[i]
}

// charged returns the bytes the encodings are charged for now.
func (e *Encoded) charged() int64 {
	n := max(e.size.Load(), 0)
	if f := e.forms.Load(); f != nil && f != &releasedForms {
		for i := range f {
			n += f[i].charged()
		}
	}
	return n
}

// release stops charging the encodings and returns what they were charged.
func (e *Encoded) release() int64 {
	n := max(e.size.Swap(-1), 0)
	if f := e.forms.Swap(&releasedForms); f != nil && f != &releasedForms {
		for i := range f {
			n += f[i].release()
		}
	}
	return n
}
