package cache

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
