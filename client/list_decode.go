package client

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
)

// A list's items are decoded as the list is read, on several goroutines:
// the reading goroutine only splits the items array into the raw JSON of
// each item (a syntactic scan, several times cheaper than decoding) and
// hands them in batches to GOMAXPROCS decoders, then gathers the decoded
// batches in order. A list that fits in one batch is decoded by the
// reading goroutine alone.
const (
	// itemBatchBytes is the raw JSON of a batch (at least, the last item
	// of a batch ends past it): large enough that hand-offs are rare
	// (about 50 items of a 1 KiB object), small enough that every decoder
	// gets work from a page of 500.
	itemBatchBytes = 64 << 10
	// eventBatchBytes is a watch's batch: smaller, as a watch's events are
	// decoded as they arrive, so that what one read from the connection
	// brings (which the reader delivers before it reads again) still makes
	// batches for several decoders.
	eventBatchBytes = 16 << 10
	// batchesPerDecoder bounds the batches read and not yet gathered, per
	// decoder, so that the raw JSON held at once stays at a few times
	// itemBatchBytes per decoder, whatever the list's size.
	batchesPerDecoder = 2
)

// decodeList decodes a list as it is read, its items in batches (see
// itemDecoder), so that the encoded list is never held whole beside the
// decoded one. Members other than apiVersion, kind, metadata and items are
// skipped.
func decodeList[T any](dec *jsonReader, l *list[T]) error {
	if dec.peekKind() == 'n' { // null: nothing, as json.Unmarshal reads it
		return decodeValue(dec, new(any))
	}
	if err := dec.readDelim('{'); err != nil {
		return err
	}
	for dec.peekKind() != '}' {
		key, err := dec.readName()
		if err != nil {
			return err
		}
		// Names match as encoding/json matches them, ignoring case; a
		// second items array replaces the first.
		switch {
		case strings.EqualFold(key, "metadata"):
			if err = decodeValue(dec, &l.Metadata); err == nil && l.OnMetadata != nil {
				l.OnMetadata(l.Metadata)
			}
		case strings.EqualFold(key, "apiVersion"):
			err = decodeValue(dec, &l.APIVersion)
		case strings.EqualFold(key, "kind"):
			err = decodeValue(dec, &l.Kind)
		case strings.EqualFold(key, "items"):
			l.Items = nil
			err = decodeItems(dec, &l.Items)
		default:
			err = dec.skipValue()
		}
		if err != nil {
			return fmt.Errorf("%v: %w", key, err)
		}
	}
	return dec.readDelim('}')
}

// decodeItems appends the elements of a JSON array (or null) to items.
func decodeItems[T any](dec *jsonReader, items *[]T) error {
	if dec.peekKind() == 'n' {
		return decodeValue(dec, new(any))
	}
	if err := dec.readDelim('['); err != nil {
		return err
	}
	if *items == nil {
		*items = []T{} // as json.Unmarshal: [] is empty, not nil
	}
	d := newListDecoder(items, unmarshal[T])
	defer d.stop()
	for dec.peekKind() != ']' {
		raw, err := dec.readValue()
		if err != nil {
			return fmt.Errorf("item %d: %w", d.count(), err)
		}
		if err := d.add(raw); err != nil {
			return err
		}
	}
	if err := dec.readDelim(']'); err != nil {
		return err
	}
	return d.flush()
}

// rawItems is the encoding of consecutive items, back to back, and where
// each ends. They are pooled: a list of any length reuses a few.
type rawItems struct {
	buf  []byte
	ends []int
}

var rawItemsPool = sync.Pool{New: func() any { return new(rawItems) }}

// maxPooledItemsBytes: larger buffers (made by a huge item) are not
// pooled, so that one huge object does not stay held.
const maxPooledItemsBytes = 4 * itemBatchBytes

// itemBatch is consecutive items of a list (or events of a watch): their
// encoding, then, once decoded, the items before the first error and that
// error.
type itemBatch[T any] struct {
	first int // the index of the batch's first item in the list
	*rawItems
	items  []T
	err    error
	failed int           // with err: the index of the item that failed
	done   chan struct{} // closed once decoded, when decoded by a decoder
}

func newItemBatch[T any](first int) *itemBatch[T] {
	return &itemBatch[T]{first: first, rawItems: rawItemsPool.Get().(*rawItems)}
}

// decode decodes the batch's items, stopping at the first error, and
// releases their encoding.
func (b *itemBatch[T]) decode(decodeItem func([]byte, *T) error) {
	defer b.release()
	b.items = make([]T, len(b.ends))
	start := 0
	for i, end := range b.ends {
		if err := decodeItem(b.buf[start:end], &b.items[i]); err != nil {
			b.items, b.err, b.failed = b.items[:i], err, b.first+i
			return
		}
		start = end
	}
}

// release returns the batch's encoding to the pool.
func (b *itemBatch[T]) release() {
	r := b.rawItems
	b.rawItems = nil
	if r == nil || cap(r.buf) > maxPooledItemsBytes {
		return
	}
	r.buf, r.ends = r.buf[:0], r.ends[:0]
	rawItemsPool.Put(r)
}

// itemDecoder decodes items given one by one in their encoding (a list's
// items, or a watch's events) and hands them to emit in order. Its decoders
// start with the first full batch and end at flush or stop.
type itemDecoder[T any] struct {
	batchBytes int // a batch is full from this many bytes
	decodeItem func(raw []byte, v *T) error
	emit       func(items []T) error // takes the decoded items, in order
	// wrap names an item that failed to decode in the error returned.
	wrap    func(index int, err error) error
	given   int                // items given so far
	batch   *itemBatch[T]      // filling; nil until an item is given after a flush
	work    chan *itemBatch[T] // to the decoders
	pending []*itemBatch[T]    // submitted and not yet gathered, in order
	wg      sync.WaitGroup
}

// newListDecoder is an itemDecoder appending a list's items to items.
func newListDecoder[T any](items *[]T, decodeItem func(raw []byte, v *T) error) *itemDecoder[T] {
	return &itemDecoder[T]{
		batchBytes: itemBatchBytes,
		decodeItem: decodeItem,
		emit:       func(decoded []T) error { *items = append(*items, decoded...); return nil },
		wrap: func(i int, err error) error {
			var zero T
			return fmt.Errorf("item %d: decoding %T: %w", i, zero, err)
		},
		given: len(*items),
	}
}

// count is how many items have been given.
func (d *itemDecoder[T]) count() int { return d.given }

// add copies the encoding of the next item into the batch, handing the
// batch to the decoders once it is full.
func (d *itemDecoder[T]) add(raw []byte) error {
	if d.batch == nil {
		d.batch = newItemBatch[T](d.given)
	}
	b := d.batch
	b.buf = append(b.buf, raw...)
	b.ends = append(b.ends, len(b.buf))
	d.given++
	if len(b.buf) < d.batchBytes {
		return nil
	}
	d.batch = nil
	return d.submit(b) // b is the decoders' now
}

// submit hands b to the decoders, first gathering the oldest batch when
// as many are pending as the bound allows.
func (d *itemDecoder[T]) submit(b *itemBatch[T]) error {
	if d.work == nil {
		decoders := runtime.GOMAXPROCS(0)
		d.work = make(chan *itemBatch[T], decoders*batchesPerDecoder)
		for range decoders {
			d.wg.Go(func() {
				for b := range d.work {
					b.decode(d.decodeItem)
					close(b.done)
				}
			})
		}
	}
	if len(d.pending) == cap(d.work) {
		if err := d.gather(); err != nil {
			b.release()
			return err
		}
	}
	b.done = make(chan struct{})
	d.pending = append(d.pending, b)
	d.work <- b
	return nil
}

// gather waits for the oldest pending batch and emits its items.
func (d *itemDecoder[T]) gather() error {
	b := d.pending[0]
	d.pending[0] = nil
	d.pending = d.pending[1:]
	<-b.done
	return d.emitBatch(b)
}

// emitBatch emits what b decoded, then its error.
func (d *itemDecoder[T]) emitBatch(b *itemBatch[T]) error {
	if len(b.items) > 0 {
		if err := d.emit(b.items); err != nil {
			return err
		}
	}
	if b.err != nil {
		return d.wrap(b.failed, b.err)
	}
	return nil
}

// flush decodes the batch being filled, which is not full, itself, emits
// every item given so far, and ends the decoders (the next full batch
// starts them again); the items given next make a new batch. Between
// flushes, nothing is held but what the next items bring.
func (d *itemDecoder[T]) flush() error {
	last := d.batch
	d.batch = nil
	if last != nil {
		last.decode(d.decodeItem)
	}
	for len(d.pending) > 0 {
		if err := d.gather(); err != nil {
			return err
		}
	}
	d.stopDecoders()
	if last == nil {
		return nil
	}
	return d.emitBatch(last)
}

// stop ends the decoders, after they have decoded what they were given,
// and releases the batch being filled.
func (d *itemDecoder[T]) stop() {
	if d.batch != nil {
		d.batch.release()
		d.batch = nil
	}
	d.stopDecoders()
}

func (d *itemDecoder[T]) stopDecoders() {
	if d.work != nil {
		close(d.work)
		d.wg.Wait()
		d.work = nil
	}
}
