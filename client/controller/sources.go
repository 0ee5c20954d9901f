package controller

import (
	"strings"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache"
)

// RequestFor returns the Request that names obj.
func RequestFor(obj client.Object) Request {
	return Request{Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// For makes every event of inf's objects enqueue that object's Request.
func For[T client.Object](c *Controller, inf *cache.SharedIndexInformer[T]) error {
	return Watches(c, inf, func(obj T) []Request { return []Request{RequestFor(obj)} })
}

// OwnerType is the kind of owner Owns enqueues.
type OwnerType struct {
	// Group and Kind of the owner ("" for the core group); an
	// ownerReference's apiVersion matches at any version of Group.
	Group, Kind string
	// ClusterScoped owners are enqueued without a namespace; others in the
	// owned object's namespace (an ownerReference cannot cross namespaces).
	ClusterScoped bool
	// EveryOwner enqueues every owner of this type, not only the one whose
	// reference has controller: true (controller-runtime's MatchEveryOwner).
	EveryOwner bool
}

// Owns makes every event of inf's objects enqueue the owner their
// controller ownerReference names, if it is of type owner (or every owner
// of that type, with EveryOwner); refs returns an object's
// ownerReferences.
func Owns[T client.Object](c *Controller, inf *cache.SharedIndexInformer[T], owner OwnerType, refs func(T) []api.OwnerReference) error {
	return Watches(c, inf, func(obj T) []Request {
		var reqs []Request
		for _, ref := range refs(obj) {
			if !owner.EveryOwner && (ref.Controller == nil || !*ref.Controller) {
				continue // the API server allows one controller reference at most
			}
			if ref.Kind != owner.Kind || !inGroup(ref.APIVersion, owner.Group) {
				continue
			}
			req := Request{Name: ref.Name}
			if !owner.ClusterScoped {
				req.Namespace = obj.GetNamespace()
			}
			reqs = append(reqs, req)
		}
		return reqs
	})
}

// inGroup reports whether apiVersion ("v1", "apps/v1") is a version of group.
func inGroup(apiVersion, group string) bool {
	g, v, found := strings.Cut(apiVersion, "/")
	if !found {
		return group == "" && apiVersion != ""
	}
	return g == group && v != "" && !strings.Contains(v, "/")
}

// Watches makes every event of inf's objects enqueue the Requests mapper
// returns for the object (for an update, for the old and the new object).
func Watches[T client.Object](c *Controller, inf *cache.SharedIndexInformer[T], mapper func(T) []Request) error {
	enqueue := func(obj T) {
		for _, req := range mapper(obj) {
			c.queue.Add(req)
		}
	}
	return c.addSource(func() (source, error) {
		reg, err := inf.AddEventHandler(cache.HandlerFuncs[T]{
			AddFunc:    func(obj T, _ bool) { enqueue(obj) },
			UpdateFunc: func(old, obj T) { enqueue(old); enqueue(obj) },
			DeleteFunc: func(obj T, _ bool) { enqueue(obj) },
		})
		if err != nil {
			return source{}, err
		}
		return source{registration: reg, remove: func() { _ = inf.RemoveEventHandler(reg) }}, nil
	})
}
