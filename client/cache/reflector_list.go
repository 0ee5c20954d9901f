package cache

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/listwatch/listwatch/client"
)

// errNoInitialEventsEnd: a streaming list's stream ended before its
// initial-events-end bookmark.
var errNoInitialEventsEnd = errors.New("stream ended before the initial-events-end bookmark")

// relistResourceVersion is the resourceVersion a LIST asks for: "0" (any
// state the server has cached) the first time, then the last one synced
// (never go back in time), or "" (the current state, read from storage) once
// the server refused the last one.
func (r *Reflector[T]) relistResourceVersion() string {
	if r.rvUnavailable {
		return ""
	}
	if rv := r.LastSyncResourceVersion(); rv != "" {
		return rv
	}
	return "0"
}

// list loads the state with paged LISTs.
func (r *Reflector[T]) list(ctx context.Context) error {
	rv := r.relistResourceVersion()
	sink := r.newListSink()
	listRV, err := r.listAll(ctx, rv, sink)
	if err != nil && rv != "" && (client.IsExpired(err) || isResourceVersionTooLarge(err)) {
		r.rvUnavailable = true
		listRV, err = r.listAll(ctx, "", sink)
	}
	if err != nil {
		err = fmt.Errorf("list at resourceVersion %q: %w", r.relistResourceVersion(), err)
		r.rvUnavailable = r.rvUnavailable || sink.applied // its pages stay applied: the next list must not be older
		return err
	}
	sink.end(listRV)
	r.replaced(listRV)
	return nil
}

// listAll reads every page of a LIST at rv into sink. If a continue token
// expires (410 on a later page), it lists again in one unpaged request.
func (r *Reflector[T]) listAll(ctx context.Context, rv string, sink *listSink[T]) (string, error) {
	first := r.baseOptions()
	first.ResourceVersion = rv
	if rv != "" && rv != "0" {
		first.ResourceVersionMatch = "NotOlderThan"
	}
	opts := first
	opts.Limit = r.opts.PageSize
	sink.begin()
	if pl, ok := r.lw.(client.PageLister[T]); ok {
		return r.listPages(ctx, pl, first, opts, sink)
	}
	for page := 0; ; page++ {
		items, listRV, cont, err := r.listPage(ctx, opts)
		if err != nil && page > 0 && client.IsExpired(err) {
			sink.begin()
			items, listRV, _, err = r.listPage(ctx, sink.inFull(first))
			if err == nil {
				sink.add(items)
			}
			return listRV, err
		}
		if err != nil {
			return "", err
		}
		sink.add(items)
		if cont == "" {
			return listRV, nil
		}
		opts = r.baseOptions()
		opts.Limit = r.opts.PageSize
		opts.Continue = cont
	}
}

// listPages is listAll through a PageLister, which asks for each page
// while the one before is decoded.
func (r *Reflector[T]) listPages(ctx context.Context, pl client.PageLister[T], first, opts client.ListOptions, sink *listSink[T]) (string, error) {
	pages := 0
	listRV, err := pl.ListPages(ctx, opts, func(items []T) error {
		pages++
		sink.add(items)
		return nil
	})
	r.count(func(s *ReflectorStats) {
		s.ListCalls += int64(pages)
		if err != nil {
			s.ListCalls++
		}
	})
	if err != nil && pages > 0 && client.IsExpired(err) {
		sink.begin()
		items, listRV, _, err := r.listPage(ctx, sink.inFull(first))
		if err == nil {
			sink.add(items)
		}
		return listRV, err
	}
	return listRV, err
}

// listSink takes a LIST's pages: straight into the store, page by page,
// when it is a PartialReplacer, or gathered for one Replace.
//
// Pages given to the store are applied (the informer indexes them and
// tells its handlers) before the list ends, where client-go applies
// nothing until it has the whole list. They are objects of one snapshot
// (every page of a list is read at its first page's resourceVersion), and
// HasSynced still waits for the end of the list. When the list fails after
// some pages, they stay applied, so the list that follows asks for the
// current state ("", inFull and Reflector.list), never older than those
// pages, so that no object a handler saw goes back in time; its end
// deletes what it does not have.
type listSink[T any] struct {
	store   ReflectorStore[T]
	parts   PartialReplacer[T] // nil: gather
	all     []T
	applied bool // a page went to the store; stays true across begin
}

func (r *Reflector[T]) newListSink() *listSink[T] {
	parts, _ := r.store.(PartialReplacer[T])
	return &listSink[T]{store: r.store, parts: parts}
}

// begin starts the list (again).
func (s *listSink[T]) begin() {
	if s.parts != nil {
		s.parts.BeginReplace()
	}
	s.all = nil
}

func (s *listSink[T]) add(items []T) {
	if s.parts != nil {
		s.parts.ReplacePart(items)
		s.applied = s.applied || len(items) > 0
		return
	}
	s.all = append(s.all, items...)
}

// inFull returns the options of a list in one request that replaces a
// paged one whose continue token expired: the first page's, or the current
// state's once pages were applied.
func (s *listSink[T]) inFull(first client.ListOptions) client.ListOptions {
	if s.applied {
		first.ResourceVersion, first.ResourceVersionMatch = "", ""
	}
	return first
}

// end replaces the store's state with the list's.
func (s *listSink[T]) end(rv string) {
	if s.parts != nil {
		s.parts.EndReplace(rv)
		return
	}
	s.store.Replace(s.all, rv)
}

func (r *Reflector[T]) listPage(ctx context.Context, opts client.ListOptions) ([]T, string, string, error) {
	r.count(func(s *ReflectorStats) { s.ListCalls++ })
	return r.lw.List(ctx, opts)
}

// watchList loads the state with a streaming list: a watch that first
// sends every object, then a bookmark marked InitialEventsEnd (annotated
// k8s.io/initial-events-end on the wire) at the resourceVersion they make
// up. A PartialReplacer gets the objects in parts as they arrive, as a
// LIST's pages (initialParts); another store gets them gathered, at the
// bookmark. The stream is returned to go on as the watch. If the stream
// goes quiet for InitialEventsTimeout before the bookmark, it fails with
// ErrInitialEventsTimeout. A stream that fails after parts were applied
// makes the next list ask for the current state, as a paged list does.
func (r *Reflector[T]) watchList(ctx context.Context) (client.Watch[T], ending) {
	opts := r.baseOptions()
	if !r.rvUnavailable {
		opts.ResourceVersion = r.LastSyncResourceVersion()
	}
	opts.ResourceVersionMatch = "NotOlderThan"
	opts.AllowWatchBookmarks = true
	opts.SendInitialEvents = new(true)
	opts.TimeoutSeconds = int64(r.watchTimeout() / time.Second)
	r.count(func(s *ReflectorStats) { s.WatchCalls++ })
	w, err := r.lw.Watch(ctx, opts)
	if err != nil {
		return nil, ending{err: fmt.Errorf("streaming list from %q: %w", opts.ResourceVersion, err)}
	}
	sink := r.newInitialSink()
	start := time.Now()
	rv, events, err := r.initialEvents(ctx, w, sink)
	if err != nil {
		w.Stop()
		r.rvUnavailable = r.rvUnavailable || sink.applied() // its parts stay applied: the next list must not be older
		return nil, ending{err: fmt.Errorf("streaming list from %q: %w", opts.ResourceVersion, err), delivered: deliveredAny(events, start)}
	}
	r.replaced(rv)
	return watchWithTimeout[T]{Watch: w, timeout: time.Duration(opts.TimeoutSeconds) * time.Second}, ending{}
}

// initialEvents reads a streaming list's events into sink up to its
// initial-events-end bookmark, ends the list there and returns the
// bookmark's resourceVersion, and how many events it took (an ERROR event
// is not one).
func (r *Reflector[T]) initialEvents(ctx context.Context, w client.Watch[T], sink initialSink[T]) (rv string, events int, err error) {
	quiet := time.NewTimer(r.opts.InitialEventsTimeout)
	defer quiet.Stop()
	for {
		select {
		case ev, ok := <-w.Events():
			if !ok {
				if err := w.Err(); err != nil {
					return "", events, fmt.Errorf("stream ended before the initial-events-end bookmark: %w", err)
				}
				return "", events, errNoInitialEventsEnd
			}
			done, err := takeInitial(sink, ev)
			if err != nil {
				return "", events, err
			}
			events++
			if done {
				rv := ev.Object.GetResourceVersion()
				sink.end(rv)
				return rv, events, nil
			}
			quiet.Reset(r.opts.InitialEventsTimeout)
		case <-quiet.C:
			return "", events, ErrInitialEventsTimeout
		case <-ctx.Done():
			return "", events, ctx.Err()
		}
	}
}

// takeInitial gives one initial event to sink; done is true at the
// initial-events-end bookmark.
func takeInitial[T client.Object](sink initialSink[T], ev client.Event[T]) (done bool, err error) {
	switch ev.Type {
	case client.Added, client.Modified:
		sink.put(ev.Object)
	case client.Deleted:
		sink.remove(ev.Object)
	case client.Bookmark:
		return ev.InitialEventsEnd, nil
	case client.Error:
		return false, eventError(ev.Err)
	}
	return false, nil
}

// initialSink takes the objects of a streaming list.
type initialSink[T any] interface {
	put(obj T)    // an object of the state (ADDED, or MODIFIED since)
	remove(obj T) // an object deleted since it was sent
	end(rv string)
	applied() bool // whether the store was given something already
}

func (r *Reflector[T]) newInitialSink() initialSink[T] {
	if parts, ok := r.store.(PartialReplacer[T]); ok {
		parts.BeginReplace() // abandons a list begun before and not ended
		return &initialParts[T]{parts: parts, store: r.store, size: int(r.opts.PageSize)}
	}
	return &initialMap[T]{store: r.store, objs: map[string]T{}}
}

// initialParts hands a streaming list's objects to a PartialReplacer in
// parts of size, as a LIST's pages, and ends the list at the bookmark,
// where the store deletes what the list did not have. A DELETED event ends
// the part being gathered and goes to the store as a deletion, after it:
// the object may have been listed in an earlier part (the deletion removes
// it; the list's end keeps what it listed) or never (the store has nothing
// to delete, or has an older state, which the list's end would delete
// anyway). A MODIFIED object is listed again, after its earlier state.
type initialParts[T any] struct {
	parts PartialReplacer[T]
	store ReflectorStore[T]
	size  int
	part  []T
	given bool
}

func (s *initialParts[T]) put(obj T) {
	if s.part == nil {
		s.part = make([]T, 0, s.size)
	}
	s.part = append(s.part, obj)
	if len(s.part) >= s.size {
		s.flush()
	}
}

func (s *initialParts[T]) remove(obj T) {
	s.flush()
	s.store.Delete(obj)
	s.given = true
}

// flush hands the part gathered so far to the store.
func (s *initialParts[T]) flush() {
	if len(s.part) == 0 {
		return
	}
	s.parts.ReplacePart(s.part)
	s.part, s.given = nil, true
}

func (s *initialParts[T]) end(rv string) {
	s.flush()
	s.parts.EndReplace(rv)
}

func (s *initialParts[T]) applied() bool { return s.given }

// initialMap gathers a streaming list's objects by key and replaces the
// store's state with them at the bookmark.
type initialMap[T client.Object] struct {
	store ReflectorStore[T]
	objs  map[string]T
}

func (s *initialMap[T]) put(obj T)    { s.objs[MetaNamespaceKeyFunc(obj)] = obj }
func (s *initialMap[T]) remove(obj T) { delete(s.objs, MetaNamespaceKeyFunc(obj)) }
func (s *initialMap[T]) end(rv string) {
	s.store.Replace(slices.Collect(maps.Values(s.objs)), rv)
}
func (s *initialMap[T]) applied() bool { return false }
