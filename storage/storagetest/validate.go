package storagetest

import (
	"errors"
	"fmt"

	"github.com/listwatch/listwatch/storage"
)

// Record is one event as a watcher saw it, reduced to what the watch
// guarantees speak of. Streams recorded anywhere (the store, the watch cache,
// the server's wire, the client's informer) are turned into Records and
// checked against a History with the validators below.
type Record struct {
	Type     string // "PUT"/"DELETE" for the store; the caller's own vocabulary elsewhere
	Key      string
	Revision int64
}

func (r Record) String() string { return fmt.Sprintf("%s %s@%d", r.Type, r.Key, r.Revision) }

// RecordsOf flattens a watch's batches into Records.
func RecordsOf(batches [][]storage.Event) []Record {
	var out []Record
	for _, b := range batches {
		for _, e := range b {
			out = append(out, Record{Type: e.Type.String(), Key: e.KV.Key, Revision: e.Revision})
		}
	}
	return out
}

// History is the authoritative sequence of changes a stream is checked
// against, in revision order (for example the store's own watch from 0, or
// the acknowledged writes sorted by revision), already filtered to what the
// watcher is entitled to see.
type History []Record

// After returns the part of h with revision > rev.
func (h History) After(rev int64) History {
	for i, r := range h {
		if r.Revision > rev {
			return h[i:]
		}
	}
	return nil
}

// ValidateOrdered checks that revisions never go backwards. Several events may
// share a revision (one atomic transaction); they must then be adjacent.
func ValidateOrdered(got []Record) error {
	for i := 1; i < len(got); i++ {
		if got[i].Revision < got[i-1].Revision {
			return fmt.Errorf("ordered: event %d (%v) comes after %v", i, got[i], got[i-1])
		}
	}
	return nil
}

// ValidateUnique checks that no event (key at revision) is delivered twice.
func ValidateUnique(got []Record) error {
	seen := make(map[Record]int, len(got))
	for i, r := range got {
		if j, dup := seen[r]; dup {
			return fmt.Errorf("unique: event %d (%v) repeats event %d", i, r, j)
		}
		seen[r] = i
	}
	return nil
}

// ValidateAtomic checks that a revision's events are delivered all together
// or not at all: if the stream holds one event of a revision that the history
// holds several events of, it holds all of them.
func ValidateAtomic(history History, got []Record) error {
	want := make(map[int64]int)
	for _, r := range history {
		want[r.Revision]++
	}
	have := make(map[int64]int)
	for _, r := range got {
		have[r.Revision]++
	}
	for rev, n := range have {
		if n != want[rev] {
			return fmt.Errorf("atomic: revision %d has %d events in the stream, %d in history", rev, n, want[rev])
		}
	}
	return nil
}

// ValidateReliable checks that the stream, watching from revision from, holds
// exactly the history's events after from, up to the stream's last event: no
// gap and nothing the history does not have. When complete is true the stream
// must also reach the end of the history.
func ValidateReliable(history History, from int64, got []Record, complete bool) error {
	want := history.After(from)
	if !complete && len(got) < len(want) {
		want = want[:len(got)]
	}
	for i := 0; i < len(want) || i < len(got); i++ {
		switch {
		case i >= len(got):
			return fmt.Errorf("reliable: stream from %d ends after %d events; history continues with %v (%d more)", from, len(got), want[i], len(want)-i)
		case i >= len(want):
			return fmt.Errorf("reliable: stream from %d has extra event %d: %v", from, i, got[i])
		case got[i] != want[i]:
			return fmt.Errorf("reliable: stream from %d, event %d: got %v, history has %v", from, i, got[i], want[i])
		}
	}
	return nil
}

// ValidateResumable checks that a stream resumed from revision from starts
// with the first history event after from (or is empty if there is none).
func ValidateResumable(history History, from int64, got []Record) error {
	want := history.After(from)
	if len(got) == 0 || len(want) == 0 {
		return nil
	}
	if got[0] != want[0] {
		return fmt.Errorf("resumable: stream from %d starts with %v, want %v", from, got[0], want[0])
	}
	return nil
}

// ValidateWatch applies every guarantee to one stream watched from revision
// from, and returns all violations joined.
func ValidateWatch(history History, from int64, got []Record, complete bool) error {
	return errors.Join(
		ValidateOrdered(got),
		ValidateUnique(got),
		ValidateAtomic(history.After(from), got),
		ValidateResumable(history, from, got),
		ValidateReliable(history, from, got, complete),
	)
}
