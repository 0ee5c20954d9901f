// Package client talks to any Kubernetes-style API server: a REST client
// configured from a kubeconfig or a URL, typed with generics over any Go type
// that decodes from JSON and exposes its metadata, with get, list (paged),
// create, update, patch, delete and watch, and errors decoded as Status.
//
// Lists are decoded as they are read, their items on GOMAXPROCS goroutines
// that the list's call starts and waits for; k8s.io/api types are listed
// and watched in protobuf when the server offers it (Config.DisableProtobuf
// keeps JSON).
//
// Credentials are those of kubeconfig files, as client-go reads them: client
// certificates, a token or a token file (read again when it changes, so that
// a rotating service account token is followed), basic authentication, or a
// credential plugin (Config.Exec), run on a goroutine of its own, bounded in
// time and output, whose answer every request needing it waits for and
// which is kept until it expires or the server refuses it, shared by the
// clients made from the same configuration; and impersonation
// (Config.Impersonate).
package client

import (
	"context"
	"net/url"
	"strconv"
)

// Object is what the client and the informer cache need of an object: its
// identity and version. Kubernetes' own API types (k8s.io/api, through
// metav1.ObjectMeta) satisfy it, so do listwatch's api types, and so does
// any struct that embeds a metadata type with these methods.
type Object interface {
	GetName() string
	GetNamespace() string
	GetResourceVersion() string
	GetLabels() map[string]string
}

// ListOptions are the query parameters of a list or a watch, as
// kube-apiserver reads them. Zero fields are not sent.
type ListOptions struct {
	LabelSelector        string
	FieldSelector        string
	ResourceVersion      string
	ResourceVersionMatch string // "Exact" or "NotOlderThan"
	Limit                int64
	Continue             string
	TimeoutSeconds       int64
	AllowWatchBookmarks  bool
	// SendInitialEvents, when non-nil, asks a watch to start with the
	// current state (streaming list) and end it with a bookmark.
	SendInitialEvents *bool
}

// Values returns the options as a query.
func (o ListOptions) Values() url.Values {
	v := url.Values{}
	set := func(k, s string) {
		if s != "" {
			v.Set(k, s)
		}
	}
	set("labelSelector", o.LabelSelector)
	set("fieldSelector", o.FieldSelector)
	set("resourceVersion", o.ResourceVersion)
	set("resourceVersionMatch", o.ResourceVersionMatch)
	set("continue", o.Continue)
	if o.Limit > 0 {
		v.Set("limit", strconv.FormatInt(o.Limit, 10))
	}
	if o.TimeoutSeconds > 0 {
		v.Set("timeoutSeconds", strconv.FormatInt(o.TimeoutSeconds, 10))
	}
	if o.AllowWatchBookmarks {
		v.Set("allowWatchBookmarks", "true")
	}
	if o.SendInitialEvents != nil {
		v.Set("sendInitialEvents", strconv.FormatBool(*o.SendInitialEvents))
	}
	return v
}

// EventType is the type of a watch event.
type EventType string

// Watch event types.
const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	Bookmark EventType = "BOOKMARK"
	Error    EventType = "ERROR"
)

// Event is one decoded watch event. For Bookmark, Object carries only the
// resourceVersion (and, at the end of initial events, the
// k8s.io/initial-events-end annotation); for Error, Err is the Status error
// and the watch ends.
type Event[T any] struct {
	Type   EventType
	Object T
	Err    error
	// InitialEventsEnd marks the bookmark that ends a watch's initial
	// events (sendInitialEvents=true), whether or not T keeps annotations.
	InitialEventsEnd bool
}

// Watch is an open watch stream.
type Watch[T any] interface {
	// Events delivers the stream's events in order; it is closed when the
	// stream ends (timeout, server close, error, or Stop).
	Events() <-chan Event[T]
	// Err says why the stream ended, once Events is closed: nil for a
	// clean end of the server's stream.
	Err() error
	// Stop ends the watch and releases its connection.
	Stop()
}

// ListerWatcher lists and watches one resource (in one namespace or all):
// what a Reflector needs. Resource[T] implements it over HTTP; tests use
// fakes.
type ListerWatcher[T any] interface {
	// List returns one page and the list's resourceVersion and continue token.
	List(ctx context.Context, opts ListOptions) (items []T, resourceVersion, continueToken string, err error)
	Watch(ctx context.Context, opts ListOptions) (Watch[T], error)
}

// PageLister lists a whole resource page by page itself, giving each
// page's items to page in order and returning the list's resourceVersion;
// a 410 on a later page is returned after the pages before it. Resource
// implements it, asking for the next page while the current one is
// decoded; the informer's Reflector uses it when its ListerWatcher has it.
type PageLister[T any] interface {
	ListPages(ctx context.Context, opts ListOptions, page func(items []T) error) (resourceVersion string, err error)
}
