package storage

import (
	"errors"
	"fmt"
)

// Sentinel errors, checked with errors.Is. Backends wrap them with context.
var (
	// ErrNotFound: the key does not exist (Get, Update, Delete).
	ErrNotFound = errors.New("key not found")
	// ErrKeyExists: Create of a key that already exists.
	ErrKeyExists = errors.New("key already exists")
	// ErrConflict: the expected ModRevision of Update or Delete did not match.
	// The error is a *ConflictError carrying the current KV.
	ErrConflict = errors.New("modification revision does not match")
	// ErrCompacted: the revision asked for (List, Watch, a continue token) is
	// older than the history the store still holds.
	ErrCompacted = errors.New("required revision has been compacted")
	// ErrFutureRevision: List or Compact at a revision the store has not reached.
	ErrFutureRevision = errors.New("required revision is a future revision")
	// ErrInvalidArgument: an empty or malformed key, a negative revision or
	// limit, or a malformed continue token.
	ErrInvalidArgument = errors.New("invalid argument")
	// ErrValueTooLarge: a value over MaxValueSize.
	ErrValueTooLarge = errors.New("value too large")
	// ErrClosed: the store was closed; also the error of watches it ended.
	ErrClosed = errors.New("store closed")
)

// ConflictError is returned by Update and Delete when the expected ModRevision
// does not match. Current is the KV as it is now, so the caller can retry
// without another read. It matches ErrConflict with errors.Is.
type ConflictError struct {
	Key      string
	Expected int64
	Current  KV
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("%s: key %q: expected %d, current %d", ErrConflict, e.Key, e.Expected, e.Current.ModRevision)
}

// Is reports whether target is ErrConflict.
func (e *ConflictError) Is(target error) bool { return target == ErrConflict }
