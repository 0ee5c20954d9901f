// Package cachetest provides test doubles for package cache and its users:
// a small Object type and a scriptable, in-memory ListerWatcher whose lists
// and watches a test answers step by step (pages, events, errors such as
// 410 and 429, streaming lists with or without their closing bookmark).
//
// Everything here is safe for concurrent use. A FakeListerWatcher creates
// channels as it is called, so under testing/synctest create it inside the
// bubble.
package cachetest

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
)

// Object is a minimal object for tests.
type Object struct {
	Name, Namespace, ResourceVersion string
	Labels, Annotations              map[string]string
	Data                             string
}

var _ client.Object = (*Object)(nil)

// GetName returns Name.
func (o *Object) GetName() string { return o.Name }

// GetNamespace returns Namespace.
func (o *Object) GetNamespace() string { return o.Namespace }

// GetResourceVersion returns ResourceVersion.
func (o *Object) GetResourceVersion() string { return o.ResourceVersion }

// GetLabels returns Labels.
func (o *Object) GetLabels() map[string]string { return o.Labels }

// GetAnnotations returns Annotations.
func (o *Object) GetAnnotations() map[string]string { return o.Annotations }

// New returns an object in namespace ns at resourceVersion rv.
func New(ns, name string, rv int) *Object {
	return &Object{Namespace: ns, Name: name, ResourceVersion: strconv.Itoa(rv)}
}

// Bookmark returns a BOOKMARK event at rv; initialEventsEnd marks it, as
// the client's decoder does, as the end of a streaming list's initial
// events (the field, and the annotation the server sends).
func Bookmark(rv int, initialEventsEnd bool) client.Event[*Object] {
	o := &Object{ResourceVersion: strconv.Itoa(rv)}
	if initialEventsEnd {
		o.Annotations = map[string]string{api.InitialEventsEndAnnotation: "true"}
	}
	return client.Event[*Object]{Type: client.Bookmark, Object: o, InitialEventsEnd: initialEventsEnd}
}

// Status returns the *api.StatusError a server sends for code and reason.
func Status(code int32, reason api.StatusReason) error {
	st := api.NewStatus(code, reason, fmt.Sprintf("test status %d %s", code, reason))
	return &api.StatusError{Status: st}
}

// Gone is the 410 Expired a server returns for a compacted resourceVersion.
func Gone() error { return Status(410, api.StatusReasonExpired) }

// TooManyRequests is a 429 asking the client to wait retryAfterSeconds.
func TooManyRequests(retryAfterSeconds int32) error {
	st := api.NewStatus(429, api.StatusReasonTooManyRequests, "slow down")
	st.Details = &api.StatusDetails{RetryAfterSeconds: retryAfterSeconds}
	return &api.StatusError{Status: st}
}

// Page is a scripted answer to one List call.
type Page[T any] struct {
	Items           []T
	ResourceVersion string
	Continue        string
	Err             error
}

// ErrNotScripted is returned by a call the test gave no answer for.
var ErrNotScripted = errors.New("cachetest: no answer scripted")

// FakeListerWatcher answers List with scripted pages, in order, and Watch
// with scripted errors, in order, then with a new FakeWatch it also sends
// on Watches for the test to drive.
type FakeListerWatcher[T any] struct {
	// Watches receives every watch opened, in order (buffered 64).
	Watches chan *FakeWatch[T]

	mu         sync.Mutex
	pages      []Page[T]
	watchErrs  []error
	listCalls  []client.ListOptions
	watchCalls []client.ListOptions
}

var _ client.ListerWatcher[*Object] = (*FakeListerWatcher[*Object])(nil)

// NewFakeListerWatcher returns a FakeListerWatcher with nothing scripted.
func NewFakeListerWatcher[T any]() *FakeListerWatcher[T] {
	return &FakeListerWatcher[T]{Watches: make(chan *FakeWatch[T], 64)}
}

// AddPages scripts answers to the next List calls.
func (f *FakeListerWatcher[T]) AddPages(pages ...Page[T]) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pages = append(f.pages, pages...)
}

// AddList scripts one unpaged List answer.
func (f *FakeListerWatcher[T]) AddList(rv string, items ...T) {
	f.AddPages(Page[T]{Items: items, ResourceVersion: rv})
}

// FailWatches scripts errors for the next Watch calls.
func (f *FakeListerWatcher[T]) FailWatches(errs ...error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchErrs = append(f.watchErrs, errs...)
}

// ListCalls returns the options of every List call so far.
func (f *FakeListerWatcher[T]) ListCalls() []client.ListOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]client.ListOptions(nil), f.listCalls...)
}

// WatchCalls returns the options of every Watch call so far.
func (f *FakeListerWatcher[T]) WatchCalls() []client.ListOptions {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]client.ListOptions(nil), f.watchCalls...)
}

// List returns the next scripted page.
func (f *FakeListerWatcher[T]) List(ctx context.Context, opts client.ListOptions) ([]T, string, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listCalls = append(f.listCalls, opts)
	if len(f.pages) == 0 {
		return nil, "", "", fmt.Errorf("list %+v: %w", opts, ErrNotScripted)
	}
	p := f.pages[0]
	f.pages = f.pages[1:]
	return p.Items, p.ResourceVersion, p.Continue, p.Err
}

// Watch returns the next scripted error, or opens a FakeWatch.
func (f *FakeListerWatcher[T]) Watch(ctx context.Context, opts client.ListOptions) (client.Watch[T], error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.watchCalls = append(f.watchCalls, opts)
	if len(f.watchErrs) > 0 {
		err := f.watchErrs[0]
		f.watchErrs = f.watchErrs[1:]
		return nil, err
	}
	w := &FakeWatch[T]{Opts: opts, events: make(chan client.Event[T]), stopped: make(chan struct{})}
	select {
	case f.Watches <- w:
	default:
		return nil, errors.New("cachetest: too many watches not taken from Watches")
	}
	return w, nil
}

// FakeWatch is an open watch the test drives: Send delivers an event (it
// blocks until the reader takes it or the watch is stopped) and End closes
// the stream. Send and End must be called from one goroutine.
type FakeWatch[T any] struct {
	// Opts are the options the watch was opened with.
	Opts client.ListOptions

	events  chan client.Event[T]
	stopped chan struct{}
	once    sync.Once
	mu      sync.Mutex
	err     error // guarded by mu
}

// Events implements client.Watch.
func (w *FakeWatch[T]) Events() <-chan client.Event[T] { return w.events }

// Err implements client.Watch.
func (w *FakeWatch[T]) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Stop implements client.Watch: later Sends return false.
func (w *FakeWatch[T]) Stop() { w.once.Do(func() { close(w.stopped) }) }

// Stopped is closed once the reader has stopped the watch.
func (w *FakeWatch[T]) Stopped() <-chan struct{} { return w.stopped }

// Send delivers ev; it returns false if the watch was stopped first.
func (w *FakeWatch[T]) Send(ev client.Event[T]) bool {
	select {
	case w.events <- ev:
		return true
	case <-w.stopped:
		return false
	}
}

// Add sends an ADDED event.
func (w *FakeWatch[T]) Add(obj T) bool {
	return w.Send(client.Event[T]{Type: client.Added, Object: obj})
}

// Modify sends a MODIFIED event.
func (w *FakeWatch[T]) Modify(obj T) bool {
	return w.Send(client.Event[T]{Type: client.Modified, Object: obj})
}

// Delete sends a DELETED event.
func (w *FakeWatch[T]) Delete(obj T) bool {
	return w.Send(client.Event[T]{Type: client.Deleted, Object: obj})
}

// End closes the stream; err is what Err reports (nil: a clean end).
func (w *FakeWatch[T]) End(err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	close(w.events)
}
