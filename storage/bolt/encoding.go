package bolt

import (
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/listwatch/listwatch/storage"
)

// Bucket and meta key names. The layout is part of the file format: changing
// it makes existing data directories unreadable.
var (
	bucketKV      = []byte("kv")      // key -> createRev(8) modRev(8) value
	bucketHistory = []byte("history") // revision(8, big-endian) -> encoded event
	bucketMeta    = []byte("meta")    // metaRevision, metaCompacted -> int64(8)

	metaRevision  = []byte("revision")  // revision of the latest write
	metaCompacted = []byte("compacted") // history at or below it is discarded
)

// errCorrupt marks bytes in the file that this package did not write.
var errCorrupt = errors.New("bolt: corrupt record")

// kvHeader is the size of a kv bucket value without the user value.
const kvHeader = 16

// revKey returns the history bucket key of rev: big-endian so that byte order
// is revision order.
func revKey(rev int64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8), uint64(rev))
}

// decodeRev is the inverse of revKey and of the meta values.
func decodeRev(b []byte) (int64, error) {
	if len(b) != 8 {
		return 0, fmt.Errorf("%w: revision of %d bytes", errCorrupt, len(b))
	}
	return int64(binary.BigEndian.Uint64(b)), nil
}

// appendKV appends the kv bucket value of a key's state to b.
func appendKV(b []byte, createRev, modRev int64, value []byte) []byte {
	b = binary.BigEndian.AppendUint64(b, uint64(createRev))
	b = binary.BigEndian.AppendUint64(b, uint64(modRev))
	return append(b, value...)
}

// decodeKV decodes a kv bucket value, copying the value out of b (which
// belongs to a bbolt transaction).
func decodeKV(key string, b []byte) (storage.KV, error) {
	if len(b) < kvHeader {
		return storage.KV{}, fmt.Errorf("%w: state of %q has %d bytes", errCorrupt, key, len(b))
	}
	return storage.KV{
		Key:            key,
		Value:          append([]byte{}, b[kvHeader:]...),
		CreateRevision: int64(binary.BigEndian.Uint64(b[0:8])),
		ModRevision:    int64(binary.BigEndian.Uint64(b[8:16])),
	}, nil
}

// appendEvent appends the history bucket value of ev to b; the revision is
// the bucket key. Layout: type(1) createRev(uvarint) len(key) key len(value)
// value hasPrev(1) [prevCreate prevMod len(prevValue) prevValue].
func appendEvent(b []byte, ev *storage.Event) []byte {
	n := 1 + 3*binary.MaxVarintLen64 + len(ev.KV.Key) + len(ev.KV.Value) + 1
	if ev.PrevKV != nil {
		n += 3*binary.MaxVarintLen64 + len(ev.PrevKV.Value)
	}
	b = slices.Grow(b, n)
	b = append(b, byte(ev.Type))
	b = binary.AppendUvarint(b, uint64(ev.KV.CreateRevision))
	b = appendBytes(b, []byte(ev.KV.Key))
	b = appendBytes(b, ev.KV.Value)
	if ev.PrevKV == nil {
		return append(b, 0)
	}
	b = append(b, 1)
	b = binary.AppendUvarint(b, uint64(ev.PrevKV.CreateRevision))
	b = binary.AppendUvarint(b, uint64(ev.PrevKV.ModRevision))
	return appendBytes(b, ev.PrevKV.Value)
}

func appendBytes(b, p []byte) []byte {
	return append(binary.AppendUvarint(b, uint64(len(p))), p...)
}

// reader decodes a record, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.fail()
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *reader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 || v > 1<<62 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return int64(v)
}

// bytes returns the next length-prefixed field, still aliasing the record.
func (r *reader) bytes() []byte {
	n := r.int()
	if r.err != nil || n > int64(len(r.b)) {
		r.fail()
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) fail() {
	if r.err == nil {
		r.err = errCorrupt
	}
}

// eventKey returns the key of an encoded event without decoding the rest;
// the result aliases b.
func eventKey(b []byte) ([]byte, error) {
	r := reader{b: b}
	r.byte()
	r.int()
	key := r.bytes()
	return key, r.err
}

// decodeEvent decodes the history record of rev. It copies everything out of
// b, which belongs to a bbolt transaction, into one allocation.
func decodeEvent(rev int64, b []byte) (storage.Event, error) {
	r := reader{b: append([]byte{}, b...)}
	ev := storage.Event{Type: storage.EventType(r.byte()), Revision: rev}
	create := r.int()
	key := string(r.bytes())
	value := r.bytes()
	hasPrev := r.byte()
	switch ev.Type {
	case storage.EventPut:
		ev.KV = storage.KV{Key: key, Value: value, CreateRevision: create, ModRevision: rev}
	case storage.EventDelete:
		ev.KV = storage.KV{Key: key, ModRevision: rev}
	default:
		r.fail()
	}
	if hasPrev == 1 {
		ev.PrevKV = &storage.KV{Key: key, CreateRevision: r.int(), ModRevision: r.int(), Value: r.bytes()}
	}
	if r.err != nil || len(r.b) != 0 {
		return storage.Event{}, fmt.Errorf("%w: history event at revision %d", errCorrupt, rev)
	}
	return ev, nil
}
