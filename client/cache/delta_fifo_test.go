package cache

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"testing/synctest"

	"github.com/google/go-cmp/cmp"
	"github.com/listwatch/listwatch/client/cache/cachetest"
)

func newTestFIFO(known KnownObjects[*obj]) *DeltaFIFO[*obj] {
	return NewDeltaFIFO(DeltaFIFOOptions[*obj]{KeyFunc: MetaNamespaceKeyFunc[*obj], KnownObjects: known})
}

// describe renders deltas as "Type name@rv" with "?" for final state unknown.
func describe(d Deltas[*obj]) string {
	var parts []string
	for _, x := range d {
		s := fmt.Sprintf("%s %s@%s", x.Type, x.Object.Name, x.Object.ResourceVersion)
		if x.FinalStateUnknown {
			s += "?"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// popAll pops every queued key, applying it to known like an informer.
func popAll(t *testing.T, f *DeltaFIFO[*obj], known *Indexer[*obj]) []string {
	t.Helper()
	var out []string
	for f.Len() > 0 {
		out = append(out, popOne(t, f, known))
	}
	return out
}

// popOne pops one key, applies it to known (if not nil) and describes it.
func popOne(t *testing.T, f *DeltaFIFO[*obj], known *Indexer[*obj]) string {
	t.Helper()
	var s string
	err := f.Pop(context.Background(), func(d Deltas[*obj], initial bool) {
		s = describe(d)
		if initial {
			s += " (initial)"
		}
		for _, x := range d {
			switch {
			case known == nil:
			case x.Type == Deleted:
				known.Delete(x.Object)
			default:
				known.Update(x.Object)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestDeltaFIFOAccumulatesPerKeyInOrder(t *testing.T) {
	f := newTestFIFO(nil)
	f.Add(cachetest.New("ns", "a", 1))
	f.Add(cachetest.New("ns", "b", 2))
	f.Update(cachetest.New("ns", "a", 3))
	f.Delete(cachetest.New("ns", "a", 4))
	want := []string{"Added a@1, Updated a@3, Deleted a@4", "Added b@2"}
	if diff := cmp.Diff(want, popAll(t, f, nil)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeltaFIFODedupsConsecutiveDeletes(t *testing.T) {
	f := newTestFIFO(nil)
	// A watched deletion followed by a relist's final-state-unknown one:
	// the watched one has more information and stays.
	f.Delete(cachetest.New("ns", "a", 5))
	f.Replace(nil, "6")
	// Two watched deletions: the later stays.
	f.Delete(cachetest.New("ns", "b", 7))
	f.Delete(cachetest.New("ns", "b", 8))
	want := []string{"Deleted a@5", "Deleted b@8"}
	if diff := cmp.Diff(want, popAll(t, f, nil)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOReplaceEmitsReplacedAndUnknownDeletions(t *testing.T) {
	known := NewIndexer[*obj](nil)
	f := newTestFIFO(known)
	f.Replace([]*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 1), cachetest.New("ns", "c", 1)}, "1")
	popAll(t, f, known)
	f.Add(cachetest.New("ns", "d", 2)) // queued, never popped
	// a and d vanished while disconnected; b changed; c is unchanged.
	f.Replace([]*obj{cachetest.New("ns", "b", 3), cachetest.New("ns", "c", 1)}, "4")
	want := []string{
		"Added d@2, Deleted d@2?",
		"Replaced b@3",
		"Replaced c@1",
		"Deleted a@1?",
	}
	if diff := cmp.Diff(want, popAll(t, f, known)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOHasSyncedAfterFirstReplacePopped(t *testing.T) {
	f := newTestFIFO(NewIndexer[*obj](nil))
	if f.HasSynced() {
		t.Fatal("HasSynced before Replace")
	}
	f.Replace([]*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 1)}, "1")
	f.Add(cachetest.New("ns", "c", 2))
	if f.HasSynced() {
		t.Fatal("HasSynced before the batch was popped")
	}
	got := []string{}
	for range 3 {
		got = append(got, popOne(t, f, nil))
		got = append(got, fmt.Sprint(f.HasSynced()))
	}
	want := []string{"Replaced a@1 (initial)", "false", "Replaced b@1 (initial)", "true", "Added c@2", "true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOEmptyReplaceSyncsAndCallsOnSynced(t *testing.T) {
	calls := 0
	f := NewDeltaFIFO(DeltaFIFOOptions[*obj]{KeyFunc: MetaNamespaceKeyFunc[*obj], OnSynced: func() { calls++ }})
	f.Replace(nil, "1")
	f.Replace(nil, "2")
	if !f.HasSynced() || calls != 1 {
		t.Errorf("HasSynced = %v, OnSynced calls = %d; want true, 1", f.HasSynced(), calls)
	}
}

func TestDeltaFIFOResyncSkipsQueuedKeys(t *testing.T) {
	known := NewIndexer[*obj](nil)
	f := newTestFIFO(known)
	f.Replace([]*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 1)}, "1")
	popAll(t, f, known)
	f.Update(cachetest.New("ns", "a", 2))
	f.Resync()
	want := []string{"Updated a@2", "Sync b@1"}
	if diff := cmp.Diff(want, popAll(t, f, known)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOTransform(t *testing.T) {
	f := newTestFIFO(nil)
	f.setTransform(func(o *obj) *obj { o.Data = "transformed"; return o })
	f.Add(cachetest.New("ns", "a", 1))
	f.Replace([]*obj{cachetest.New("ns", "b", 1)}, "1")
	f.Delete(cachetest.New("ns", "c", 1))
	var got []string
	for f.Len() > 0 {
		_ = f.Pop(context.Background(), func(d Deltas[*obj], _ bool) {
			got = append(got, d[0].Object.Name+"="+d[0].Object.Data)
		})
	}
	if diff := cmp.Diff([]string{"a=transformed", "b=transformed", "c="}, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func TestDeltaFIFOPopWaitsAndClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := newTestFIFO(nil)
		got := make(chan string, 1)
		go func() {
			_ = f.Pop(context.Background(), func(d Deltas[*obj], _ bool) { got <- describe(d) })
		}()
		synctest.Wait()
		f.Add(cachetest.New("ns", "a", 1))
		if s := <-got; s != "Added a@1" {
			t.Errorf("Pop got %q", s)
		}

		errc := make(chan error, 1)
		go func() { errc <- f.Pop(context.Background(), func(Deltas[*obj], bool) {}) }()
		synctest.Wait()
		f.Close()
		if err := <-errc; !errors.Is(err, ErrFIFOClosed) {
			t.Errorf("Pop after Close: %v", err)
		}

		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := newTestFIFO(nil).Pop(ctx, func(Deltas[*obj], bool) {}); !errors.Is(err, context.Canceled) {
			t.Errorf("Pop with a done ctx: %v", err)
		}
	})
}

// A list in parts on an empty FIFO: its objects are popped as they come,
// as the initial list, and HasSynced waits for its end.
func TestDeltaFIFOListInParts(t *testing.T) {
	known := NewIndexer[*obj](nil)
	synced := 0
	f := NewDeltaFIFO(DeltaFIFOOptions[*obj]{KeyFunc: MetaNamespaceKeyFunc[*obj], KnownObjects: known, OnSynced: func() { synced++ }})
	f.BeginReplace()
	f.ReplacePart([]*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 1)})
	got := []string{popOne(t, f, known)}
	f.ReplacePart([]*obj{cachetest.New("ns", "c", 1)})
	got = append(got, popAll(t, f, known)...)
	if f.HasSynced() || synced != 0 {
		t.Fatalf("synced (HasSynced %v, OnSynced %d times) before the list ended", f.HasSynced(), synced)
	}
	f.ReplacePart([]*obj{cachetest.New("ns", "d", 1)})
	f.EndReplace("1")
	if f.HasSynced() {
		t.Fatal("HasSynced before d was popped")
	}
	got = append(got, popAll(t, f, known)...)
	want := []string{"Replaced a@1 (initial)", "Replaced b@1 (initial)", "Replaced c@1 (initial)", "Replaced d@1 (initial)"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if !f.HasSynced() || synced != 1 {
		t.Errorf("HasSynced %v, OnSynced called %d times; want true, once", f.HasSynced(), synced)
	}
}

// A list in parts abandoned half-way (the Reflector's list failed) and
// begun again: the end of the second deletes what only the first had,
// popped or still queued; a Replace after an abandoned list does too.
func TestDeltaFIFOListInPartsAbandoned(t *testing.T) {
	for _, end := range []string{"EndReplace", "Replace"} {
		t.Run(end, func(t *testing.T) {
			known := NewIndexer[*obj](nil)
			f := newTestFIFO(known)
			f.BeginReplace()
			f.ReplacePart([]*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 1)})
			got := []string{popOne(t, f, known)} // a is known, b queued
			second := []*obj{cachetest.New("ns", "c", 2)}
			if end == "EndReplace" {
				f.BeginReplace()
				f.ReplacePart(second)
				f.EndReplace("2")
			} else {
				f.Replace(second, "2")
			}
			got = append(got, popAll(t, f, known)...)
			want := []string{"Replaced a@1 (initial)", "Replaced b@1, Deleted b@1? (initial)", "Replaced c@2 (initial)", "Deleted a@1? (initial)"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if keys := known.ListKeys(); len(keys) != 1 || keys[0] != "ns/c" || !f.HasSynced() {
				t.Errorf("known %v, HasSynced %v; want [ns/c], true", keys, f.HasSynced())
			}
		})
	}
}

// A relist in parts replaces like Replace: changed objects as Replaced,
// the ones it does not list deleted at its end.
func TestDeltaFIFORelistInParts(t *testing.T) {
	known := NewIndexer[*obj](nil)
	f := newTestFIFO(known)
	f.Replace([]*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 1)}, "1")
	popAll(t, f, known)
	f.BeginReplace()
	f.ReplacePart([]*obj{cachetest.New("ns", "b", 3)})
	f.ReplacePart([]*obj{cachetest.New("ns", "c", 3)})
	f.EndReplace("3")
	want := []string{"Replaced b@3", "Replaced c@3", "Deleted a@1?"}
	if diff := cmp.Diff(want, popAll(t, f, known)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// The parts of a list begun on an empty FIFO are queued apart from the
// per-key map until anything else is queued: changes of their keys that
// arrive before they are popped (the watch after the list) still join
// those keys' deltas, in order, and each key is popped once.
func TestDeltaFIFOListInPartsThenChanges(t *testing.T) {
	known := NewIndexer[*obj](nil)
	f := newTestFIFO(known)
	f.BeginReplace()
	f.ReplacePart([]*obj{cachetest.New("ns", "a", 1), cachetest.New("ns", "b", 1)})
	got := []string{popOne(t, f, known)}
	f.ReplacePart([]*obj{cachetest.New("ns", "c", 1)})
	f.EndReplace("1")
	f.Resync() // a is known and not queued
	f.Update(cachetest.New("ns", "b", 2))
	f.Delete(cachetest.New("ns", "c", 1))
	f.Add(cachetest.New("ns", "d", 3))
	if f.Len() != 4 {
		t.Errorf("Len %d; want 4 (b, c, a, d)", f.Len())
	}
	got = append(got, popAll(t, f, known)...)
	want := []string{"Replaced a@1 (initial)", "Replaced b@1, Updated b@2 (initial)", "Replaced c@1, Deleted c@1 (initial)", "Sync a@1", "Added d@3"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"ns/a", "ns/b", "ns/d"}, sorted(known.ListKeys(), nil)); diff != "" || !f.HasSynced() {
		t.Errorf("known (-want +got):\n%s\nHasSynced %v; want true", diff, f.HasSynced())
	}
}

// A change queued in the middle of a list in parts begun on an empty FIFO
// is not the list's: the list's end deletes it when the list does not have
// it, as it does when the list began on a FIFO with something queued.
func TestDeltaFIFOFreshListInPartsDeletesAddedMeanwhile(t *testing.T) {
	known := NewIndexer[*obj](nil)
	f := newTestFIFO(known)
	f.BeginReplace()
	f.ReplacePart([]*obj{cachetest.New("ns", "a", 1)})
	got := []string{popOne(t, f, known)} // a is known
	f.ReplacePart([]*obj{cachetest.New("ns", "b", 1)})
	f.Add(cachetest.New("ns", "x", 1))
	f.ReplacePart([]*obj{cachetest.New("ns", "c", 1)})
	f.EndReplace("1")
	got = append(got, popAll(t, f, known)...)
	want := []string{"Replaced a@1 (initial)", "Replaced b@1 (initial)", "Added x@1, Deleted x@1?", "Replaced c@1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if keys := known.ListKeys(); len(keys) != 3 || slices.Contains(keys, "ns/x") {
		t.Errorf("known %v; want a, b and c", keys)
	}
}
