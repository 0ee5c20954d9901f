package storage

import (
	"context"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Limits on arguments, enforced by every backend through ValidateKey and ValidateValue.
const (
	// MaxValueSize is 1.5 MiB, etcd's default request limit. An etcd cluster
	// must allow requests of MaxValueSize plus the key and framing
	// (--max-request-bytes of 1.5 MiB + 16 KiB) for every backend to accept
	// the same values; otherwise the etcd backend returns ErrValueTooLarge
	// for values near the limit.
	MaxValueSize = 3 * 1024 * 1024 / 2
	// MaxKeySize bounds keys well above any /registry/<group>/<resource>/<ns>/<name>
	// (names are at most 253 bytes).
	MaxKeySize = 4096
)

// KV is one key's state. Value is owned by the caller once returned.
type KV struct {
	Key            string
	Value          []byte
	CreateRevision int64
	ModRevision    int64
}

// EventType says what a change did to its key.
type EventType uint8

// The two kinds of change.
const (
	EventPut    EventType = iota + 1 // the key was created or updated
	EventDelete                      // the key was deleted
)

func (t EventType) String() string {
	switch t {
	case EventPut:
		return "PUT"
	case EventDelete:
		return "DELETE"
	}
	return fmt.Sprintf("EventType(%d)", uint8(t))
}

// Event is one change, at its own revision.
//
// For EventPut, KV is the key's new state and PrevKV its state before the
// change, or nil when the put created the key. For EventDelete, KV holds only
// Key and ModRevision (= Revision) and PrevKV is the deleted state.
type Event struct {
	Type     EventType
	Revision int64
	KV       KV
	PrevKV   *KV
}

// IsCreate reports whether the event created its key.
func (e Event) IsCreate() bool { return e.Type == EventPut && e.PrevKV == nil }

// ListOptions select what List reads.
type ListOptions struct {
	// Revision to read at; 0 means the current revision. Ignored when Continue is set.
	Revision int64
	// Limit caps the number of KVs returned; 0 means no limit.
	Limit int64
	// Continue is the token of a previous page; the page is read at that page's revision.
	Continue string
}

// ListResponse is one page of a List.
type ListResponse struct {
	// KVs are in key order.
	KVs []KV
	// Revision is the revision the list was read at (the same for every page).
	Revision int64
	// Continue is set when more KVs remain; pass it back in ListOptions.
	Continue string
}

// Interface is a revisioned key-value store with ordered watch. See the
// package documentation for the semantics every implementation honours;
// storagetest.Run checks them.
type Interface interface {
	// Create stores value at key and returns the new revision; ErrKeyExists if
	// key is present.
	Create(ctx context.Context, key string, value []byte) (int64, error)
	// Get returns the current state of key; ErrNotFound if absent.
	Get(ctx context.Context, key string) (KV, error)
	// List returns the KVs whose keys start with prefix, in key order.
	List(ctx context.Context, prefix string, opts ListOptions) (ListResponse, error)
	// Update replaces key's value if its ModRevision equals expectedModRevision
	// (0: whatever it is) and returns the new revision. A mismatch returns a
	// *ConflictError; an absent key ErrNotFound.
	Update(ctx context.Context, key string, expectedModRevision int64, value []byte) (int64, error)
	// Delete removes key if its ModRevision equals expectedModRevision (0:
	// whatever it is) and returns the deleted KV and the new revision. A
	// mismatch returns a *ConflictError; an absent key ErrNotFound.
	Delete(ctx context.Context, key string, expectedModRevision int64) (KV, int64, error)
	// Watch streams every change under prefix with revision > fromRevision.
	Watch(ctx context.Context, prefix string, fromRevision int64) (Watcher, error)
	// CurrentRevision returns the revision of the latest write: 0 for a new
	// bolt or memory store; etcd's cluster revision (1 or more) for etcd.
	CurrentRevision(ctx context.Context) (int64, error)
	// Compact discards history before revision. Compacting at or below the
	// current compaction revision does nothing; above the current revision
	// returns ErrFutureRevision.
	Compact(ctx context.Context, revision int64) error
	// Close releases the store and ends every watch with ErrClosed.
	Close() error
}

// Watcher is an open watch.
type Watcher interface {
	// Events delivers batches of events in revision order; the channel is
	// closed when the watch ends.
	Events() <-chan []Event
	// Err says why the watch ended, once Events is closed: ctx's error when
	// the caller ended it, ErrCompacted, ErrClosed or a backend failure.
	Err() error
}

// ProgressWatcher is a Watcher that can say how far it has seen the store,
// including revisions that changed nothing under its prefix. The watch cache
// needs it to know it is as fresh as the store when the last writes were to
// other prefixes (kube-apiserver uses etcd's progress notifications for this).
type ProgressWatcher interface {
	Watcher
	// Progress returns a revision r such that every event under the prefix
	// with a revision <= r has already been sent on Events (or the watch
	// has ended). It never decreases.
	Progress() int64
	// RequestProgress asks the backend to bring Progress up to the store's
	// current revision soon; backends that advance it on every commit
	// return at once. It is best effort (etcd answers only while the watch
	// is up to date): callers that wait for progress ask again.
	RequestProgress(ctx context.Context) error
}

// ValidateKey returns an error wrapping ErrInvalidArgument unless key is a
// valid key (non-empty, starting with "/", UTF-8, no NUL, at most MaxKeySize).
func ValidateKey(key string) error {
	switch {
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalidArgument)
	case len(key) > MaxKeySize:
		return fmt.Errorf("%w: key of %d bytes exceeds %d", ErrInvalidArgument, len(key), MaxKeySize)
	case key[0] != '/':
		return fmt.Errorf("%w: key %q does not start with \"/\"", ErrInvalidArgument, key)
	case strings.IndexByte(key, 0) >= 0:
		return fmt.Errorf("%w: key %q contains a NUL byte", ErrInvalidArgument, key)
	case !utf8.ValidString(key):
		return fmt.Errorf("%w: key %q is not valid UTF-8", ErrInvalidArgument, key)
	}
	return nil
}

// ValidatePrefix is ValidateKey for the prefix of a List or Watch.
func ValidatePrefix(prefix string) error { return ValidateKey(prefix) }

// ValidateValue returns ErrValueTooLarge (wrapped) for a value over MaxValueSize.
func ValidateValue(value []byte) error {
	if len(value) > MaxValueSize {
		return fmt.Errorf("%w: %d bytes exceeds %d", ErrValueTooLarge, len(value), MaxValueSize)
	}
	return nil
}

// ValidateRevision returns an error wrapping ErrInvalidArgument for a negative revision.
func ValidateRevision(rev int64) error {
	if rev < 0 {
		return fmt.Errorf("%w: negative revision %d", ErrInvalidArgument, rev)
	}
	return nil
}
