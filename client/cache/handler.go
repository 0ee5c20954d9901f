package cache

import "context"

// ResourceEventHandler receives an informer's notifications for one
// handler, in order, on that handler's own goroutine. The objects are the
// cached ones: do not modify them.
type ResourceEventHandler[T any] interface {
	// OnAdd: obj appeared. isInInitialList is true for objects of the
	// informer's first list, and for the current objects given to a handler
	// added after the informer started.
	OnAdd(obj T, isInInitialList bool)
	// OnUpdate: obj changed from oldObj to newObj. During a resync, or when
	// a relist returns an object unchanged, oldObj and newObj have the same
	// resourceVersion (and are only sent to handlers whose resync is due).
	OnUpdate(oldObj, newObj T)
	// OnDelete: obj was deleted. obj is its final state, or, when
	// finalStateUnknown is true, the last state the informer knew: the
	// deletion happened while the watch was down and was found by a relist
	// (client-go's DeletedFinalStateUnknown).
	OnDelete(obj T, finalStateUnknown bool)
}

// HandlerFuncs adapts functions to a ResourceEventHandler; nil ones are skipped.
type HandlerFuncs[T any] struct {
	AddFunc    func(obj T, isInInitialList bool)
	UpdateFunc func(oldObj, newObj T)
	DeleteFunc func(obj T, finalStateUnknown bool)
}

var _ ResourceEventHandler[any] = HandlerFuncs[any]{}

// OnAdd calls AddFunc if set.
func (h HandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	if h.AddFunc != nil {
		h.AddFunc(obj, isInInitialList)
	}
}

// OnUpdate calls UpdateFunc if set.
func (h HandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(oldObj, newObj)
	}
}

// OnDelete calls DeleteFunc if set.
func (h HandlerFuncs[T]) OnDelete(obj T, finalStateUnknown bool) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(obj, finalStateUnknown)
	}
}

// ResourceEventHandlerWithContext is a ResourceEventHandler whose calls
// take a context. An informer calls a handler that has these methods
// through them, with a context cancelled when the handler is removed
// (RemoveEventHandler) or the informer stops, so that work a call started
// (a request, a wait) ends with the handler.
type ResourceEventHandlerWithContext[T any] interface {
	OnAddWithContext(ctx context.Context, obj T, isInInitialList bool)
	OnUpdateWithContext(ctx context.Context, oldObj, newObj T)
	OnDeleteWithContext(ctx context.Context, obj T, finalStateUnknown bool)
}

// withContext returns h's context-taking calls, or h's own calls, the
// context dropped, when it has none.
func withContext[T any](h ResourceEventHandler[T]) ResourceEventHandlerWithContext[T] {
	if hc, ok := h.(ResourceEventHandlerWithContext[T]); ok {
		return hc
	}
	return ignoreContext[T]{h}
}

type ignoreContext[T any] struct{ h ResourceEventHandler[T] }

func (i ignoreContext[T]) OnAddWithContext(_ context.Context, obj T, initial bool) {
	i.h.OnAdd(obj, initial)
}

func (i ignoreContext[T]) OnUpdateWithContext(_ context.Context, oldObj, newObj T) {
	i.h.OnUpdate(oldObj, newObj)
}

func (i ignoreContext[T]) OnDeleteWithContext(_ context.Context, obj T, unknown bool) {
	i.h.OnDelete(obj, unknown)
}

// ContextHandlerFuncs adapts functions given a context to a handler; nil
// ones are skipped. Through an informer, the context is cancelled when
// the handler is removed or the informer stops; called as a plain
// ResourceEventHandler, it is context.Background().
type ContextHandlerFuncs[T any] struct {
	AddFunc    func(ctx context.Context, obj T, isInInitialList bool)
	UpdateFunc func(ctx context.Context, oldObj, newObj T)
	DeleteFunc func(ctx context.Context, obj T, finalStateUnknown bool)
}

var (
	_ ResourceEventHandler[any]            = ContextHandlerFuncs[any]{}
	_ ResourceEventHandlerWithContext[any] = ContextHandlerFuncs[any]{}
)

// OnAddWithContext calls AddFunc if set.
func (h ContextHandlerFuncs[T]) OnAddWithContext(ctx context.Context, obj T, isInInitialList bool) {
	if h.AddFunc != nil {
		h.AddFunc(ctx, obj, isInInitialList)
	}
}

// OnUpdateWithContext calls UpdateFunc if set.
func (h ContextHandlerFuncs[T]) OnUpdateWithContext(ctx context.Context, oldObj, newObj T) {
	if h.UpdateFunc != nil {
		h.UpdateFunc(ctx, oldObj, newObj)
	}
}

// OnDeleteWithContext calls DeleteFunc if set.
func (h ContextHandlerFuncs[T]) OnDeleteWithContext(ctx context.Context, obj T, finalStateUnknown bool) {
	if h.DeleteFunc != nil {
		h.DeleteFunc(ctx, obj, finalStateUnknown)
	}
}

// OnAdd calls AddFunc with context.Background().
func (h ContextHandlerFuncs[T]) OnAdd(obj T, isInInitialList bool) {
	h.OnAddWithContext(context.Background(), obj, isInInitialList)
}

// OnUpdate calls UpdateFunc with context.Background().
func (h ContextHandlerFuncs[T]) OnUpdate(oldObj, newObj T) {
	h.OnUpdateWithContext(context.Background(), oldObj, newObj)
}

// OnDelete calls DeleteFunc with context.Background().
func (h ContextHandlerFuncs[T]) OnDelete(obj T, finalStateUnknown bool) {
	h.OnDeleteWithContext(context.Background(), obj, finalStateUnknown)
}

// FilteringHandler passes to Handler the notifications of the objects
// Filter accepts, with client-go's FilteringResourceEventHandler
// semantics: an update is passed on as an update when Filter accepts both
// states, as an add (not in the initial list) of the new state when it
// accepts only the new one, as a delete (final state known) of the old
// state when it accepts only the old one, and not at all otherwise; a
// delete is passed on when Filter accepts the deleted object's last state.
// Filter runs on the handler's goroutine, and must not modify the object.
// A Handler with context-taking calls gets the informer's context.
type FilteringHandler[T any] struct {
	Filter  func(obj T) bool
	Handler ResourceEventHandler[T]
}

var (
	_ ResourceEventHandler[any]            = FilteringHandler[any]{}
	_ ResourceEventHandlerWithContext[any] = FilteringHandler[any]{}
)

// OnAddWithContext passes the add on if Filter accepts obj.
func (f FilteringHandler[T]) OnAddWithContext(ctx context.Context, obj T, isInInitialList bool) {
	if f.Filter(obj) {
		withContext(f.Handler).OnAddWithContext(ctx, obj, isInInitialList)
	}
}

// OnUpdateWithContext passes the update on as an update, an add or a
// delete, by what Filter says of each state.
func (f FilteringHandler[T]) OnUpdateWithContext(ctx context.Context, oldObj, newObj T) {
	older, newer := f.Filter(oldObj), f.Filter(newObj)
	h := withContext(f.Handler)
	switch {
	case older && newer:
		h.OnUpdateWithContext(ctx, oldObj, newObj)
	case newer:
		h.OnAddWithContext(ctx, newObj, false)
	case older:
		h.OnDeleteWithContext(ctx, oldObj, false)
	}
}

// OnDeleteWithContext passes the delete on if Filter accepts obj.
func (f FilteringHandler[T]) OnDeleteWithContext(ctx context.Context, obj T, finalStateUnknown bool) {
	if f.Filter(obj) {
		withContext(f.Handler).OnDeleteWithContext(ctx, obj, finalStateUnknown)
	}
}

// OnAdd is OnAddWithContext with context.Background().
func (f FilteringHandler[T]) OnAdd(obj T, isInInitialList bool) {
	f.OnAddWithContext(context.Background(), obj, isInInitialList)
}

// OnUpdate is OnUpdateWithContext with context.Background().
func (f FilteringHandler[T]) OnUpdate(oldObj, newObj T) {
	f.OnUpdateWithContext(context.Background(), oldObj, newObj)
}

// OnDelete is OnDeleteWithContext with context.Background().
func (f FilteringHandler[T]) OnDelete(obj T, finalStateUnknown bool) {
	f.OnDeleteWithContext(context.Background(), obj, finalStateUnknown)
}
