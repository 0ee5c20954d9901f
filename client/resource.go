package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// GroupVersionResource names a served resource: ("", "v1", "configmaps"),
// ("apps", "v1", "deployments").
type GroupVersionResource struct {
	Group    string
	Version  string
	Resource string
}

// String is resource.version.group, as kubectl spells a fully specified
// resource.
func (g GroupVersionResource) String() string {
	if g.Group == "" {
		return g.Resource + "." + g.Version
	}
	return g.Resource + "." + g.Version + "." + g.Group
}

// GroupVersion is the apiVersion of the resource's objects: "v1",
// "apps/v1".
func (g GroupVersionResource) GroupVersion() string {
	if g.Group == "" {
		return g.Version
	}
	return g.Group + "/" + g.Version
}

// DefaultPageSize is ListAll's page size when ListOptions.Limit is 0, as
// client-go's pager.
const DefaultPageSize = 500

// Resource reads and writes one resource, in one namespace or (with "")
// across all namespaces or cluster-scoped, decoding objects into T as
// encoding/json does (lists and watches through json/v2's faster decoder,
// see jsonOptions), or from protobuf for lists and watches when T is a
// k8s.io/api type and the server offers it. T is typically a pointer to a
// struct that embeds its metadata (such as *corev1.ConfigMap from
// k8s.io/api), or Unstructured. A Resource is safe for concurrent use and
// implements ListerWatcher[T].
type Resource[T Object] struct {
	c         *Client
	gvr       GroupVersionResource
	namespace string
	// protoDecode decodes a T from protobuf; nil when T is not a protobuf
	// message type (or the client's Config disables protobuf), and lists
	// are asked for in JSON only.
	protoDecode func(raw []byte, v *T, typ api.TypeMeta) error
	// metadataOnly: T is *api.PartialObjectMetadata, and reads ask for
	// objects' metadata alone.
	metadataOnly bool
}

var (
	_ ListerWatcher[Unstructured] = (*Resource[Unstructured])(nil)
	_ PageLister[Unstructured]    = (*Resource[Unstructured])(nil)
)

// NewResource returns access to gvr in namespace through c.
//
// A Resource[*api.PartialObjectMetadata] reads objects' metadata alone, as
// client-go's metadata client does: it asks for the meta.k8s.io/v1
// PartialObjectMetadata forms (falling back to whole objects, whose
// metadata is kept, from a server without them), and refuses Create and
// Update, which would send an object without its contents.
func NewResource[T Object](c *Client, gvr GroupVersionResource, namespace string) *Resource[T] {
	_, metadataOnly := any(*new(T)).(*api.PartialObjectMetadata)
	r := &Resource[T]{c: c, gvr: gvr, namespace: namespace, metadataOnly: metadataOnly}
	if c.protobuf {
		r.protoDecode = protoDecoder[T]()
	}
	return r
}

// InNamespace returns the same resource in another namespace.
func (r *Resource[T]) InNamespace(namespace string) *Resource[T] {
	return NewResource[T](r.c, r.gvr, namespace)
}

// GVR returns the resource's name.
func (r *Resource[T]) GVR() GroupVersionResource { return r.gvr }

// WriteOptions are the query parameters of a create, update or patch.
type WriteOptions struct {
	// FieldManager names the writer in managedFields (required by apply).
	FieldManager string
	// DryRun runs every step but persisting (dryRun=All).
	DryRun bool
}

func (o WriteOptions) values() url.Values {
	v := url.Values{}
	if o.FieldManager != "" {
		v.Set("fieldManager", o.FieldManager)
	}
	if o.DryRun {
		v.Set("dryRun", "All")
	}
	return v
}

// PatchType is the Content-Type of a patch.
type PatchType string

// Patch types, as kube-apiserver accepts them.
const (
	JSONPatchType           PatchType = "application/json-patch+json"
	MergePatchType          PatchType = "application/merge-patch+json"
	StrategicMergePatchType PatchType = "application/strategic-merge-patch+json"
	// ApplyPatchType is server-side apply: the body is the full intent in
	// YAML or JSON; FieldManager is required; it creates a missing object.
	ApplyPatchType PatchType = "application/apply-patch+yaml"
)

// PatchOptions are the query parameters of a patch.
type PatchOptions struct {
	WriteOptions
	// Force takes ownership of fields other managers own (apply only).
	Force bool
}

// DeleteOptions are the body of a delete.
type DeleteOptions struct {
	// Preconditions fail the delete with a Conflict unless they hold.
	Preconditions      Preconditions
	PropagationPolicy  string // "Orphan", "Background" or "Foreground"
	GracePeriodSeconds *int64
	DryRun             bool
}

// Preconditions that must hold for a delete to proceed.
type Preconditions struct {
	UID             string `json:"uid,omitempty"`
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// path is the URL path of the resource in namespace, or of one object.
func (r *Resource[T]) path(namespace, name string) string {
	p := "/apis/" + r.gvr.Group + "/" + r.gvr.Version
	if r.gvr.Group == "" {
		p = "/api/" + r.gvr.Version
	}
	if namespace != "" {
		p += "/namespaces/" + url.PathEscape(namespace)
	}
	p += "/" + r.gvr.Resource
	if name != "" {
		p += "/" + url.PathEscape(name)
	}
	return p
}

// objectPath is path for a named object; a name that is empty, "." or
// "..", or holds "/" or "%", is refused before anything is sent, as
// client-go's Request.Name does: the server would read the path as another
// one (configmaps/.. is the namespace, configmaps/ the whole collection).
func (r *Resource[T]) objectPath(namespace, name string) (string, error) {
	if name == "" {
		return "", errors.New("resource name may not be empty")
	}
	if msgs := api.PathSegmentNameErrors(name); msgs != nil {
		return "", fmt.Errorf("invalid resource name %q: %v", name, msgs)
	}
	return r.path(namespace, name), nil
}

// objectNamespace is where obj is written: the resource's namespace, or
// the object's own when the resource has none.
func (r *Resource[T]) objectNamespace(obj T) string {
	if r.namespace != "" {
		return r.namespace
	}
	return obj.GetNamespace()
}

// decode unmarshals one object.
func decode[T any](data []byte) (T, error) {
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return v, fmt.Errorf("decoding %T: %w", v, err)
	}
	return v, nil
}

// call sends r and decodes the object it answers.
func (r *Resource[T]) call(ctx context.Context, req *request) (T, error) {
	resp, err := r.c.do(ctx, req)
	if err != nil {
		var zero T
		return zero, err
	}
	return decode[T](resp.body)
}

// Get reads one object.
func (r *Resource[T]) Get(ctx context.Context, name string) (T, error) {
	p, err := r.objectPath(r.namespace, name)
	if err != nil {
		var zero T
		return zero, err
	}
	return r.call(ctx, &request{method: http.MethodGet, path: p, accept: r.objectAccept()})
}

// list is the list of a page, with items decoded straight into T.
type list[T any] struct {
	APIVersion string       `json:"apiVersion"`
	Kind       string       `json:"kind"`
	Metadata   api.ListMeta `json:"metadata"`
	Items      []T          `json:"items"`
	// OnMetadata, if set, is called with Metadata once it is decoded,
	// before the items that follow it (kube-apiserver and listwatch write
	// metadata first), so that the next page can be asked for early.
	OnMetadata func(api.ListMeta) `json:"-"`
}

// List reads one page: at most opts.Limit items (all when 0), the list's
// resourceVersion, and the continue token of the next page ("" on the
// last). A T of k8s.io/api (a protobuf message type) is read in protobuf
// when the server offers it.
func (r *Resource[T]) List(ctx context.Context, opts ListOptions) (items []T, resourceVersion, continueToken string, err error) {
	l, err := r.list(ctx, opts, nil)
	if err != nil {
		return nil, "", "", err
	}
	return l.Items, l.Metadata.ResourceVersion, l.Metadata.Continue, nil
}

// list reads one page, calling onMeta (if set) with its metadata as soon as
// it is decoded.
func (r *Resource[T]) list(ctx context.Context, opts ListOptions, onMeta func(api.ListMeta)) (*list[T], error) {
	l := &list[T]{OnMetadata: onMeta}
	_, err := r.c.do(ctx, &request{
		method: http.MethodGet, path: r.path(r.namespace, ""), query: opts.Values(), accept: r.streamAccept(mediaPartialList),
		decode: func(contentType string, body io.Reader) error {
			var err error
			if r.protoDecode != nil && isProtobuf(contentType) {
				err = decodeProtoList(body, r.protoDecode, l)
			} else {
				err = decodeList(newJSONReader(body), l)
			}
			if err != nil {
				return fmt.Errorf("decoding the list of %s: %w", r.gvr.Resource, err)
			}
			return nil
		},
	})
	if err != nil {
		return nil, err
	}
	if items, ok := any(l.Items).([]Unstructured); ok {
		setItemTypes(items, l.APIVersion, l.Kind)
	}
	return l, nil
}

// setItemTypes gives items without apiVersion and kind those of their
// list, as client-go's unstructured decoding does: kube-apiserver leaves
// them out of the items of a built-in kind's list, and a watch's objects
// have them.
func setItemTypes(items []Unstructured, apiVersion, listKind string) {
	kind := strings.TrimSuffix(listKind, "List")
	for _, it := range items {
		if it.GetAPIVersion() == "" && it.GetKind() == "" {
			it["apiVersion"], it["kind"] = apiVersion, kind
		}
	}
}

// ListPages reads every page of a list from opts (opts.Limit items each,
// DefaultPageSize when 0), in order, giving each page's items to page. It
// asks for the next page as soon as the current page's continue token is
// read, before its items are decoded, so that the server prepares the next
// page while this one is decoded: at most two pages are in flight. It
// returns the list's resourceVersion. A 410 on a later page (its continue
// token expired) is returned as it is, after the pages before it.
func (r *Resource[T]) ListPages(ctx context.Context, opts ListOptions, page func(items []T) error) (resourceVersion string, err error) {
	if opts.Limit == 0 {
		opts.Limit = DefaultPageSize
	}
	cur := r.fetchPage(ctx, opts)
	for {
		var next *pageFetch[T]
		select {
		case meta := <-cur.meta:
			next = r.fetchNextPage(ctx, opts, meta)
		case <-cur.done:
		}
		<-cur.done
		if cur.err != nil {
			next.stop()
			return "", cur.err
		}
		if next == nil { // the metadata came with the end of the page
			next = r.fetchNextPage(ctx, opts, cur.list.Metadata)
		}
		if err := page(cur.list.Items); err != nil {
			next.stop()
			return "", err
		}
		if next == nil {
			return cur.list.Metadata.ResourceVersion, nil
		}
		cur = next
	}
}

// fetchNextPage starts reading the page after the one whose metadata is
// meta; nil on the last page.
func (r *Resource[T]) fetchNextPage(ctx context.Context, opts ListOptions, meta api.ListMeta) *pageFetch[T] {
	if meta.Continue == "" {
		return nil
	}
	// Later pages are read at the first page's resourceVersion, which the
	// token carries; the server refuses both at once.
	opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = meta.Continue, "", ""
	return r.fetchPage(ctx, opts)
}

// pageFetch is one page being read on a goroutine of its own, which ends
// with the request (done); stop cancels it and waits.
type pageFetch[T any] struct {
	meta   chan api.ListMeta // the page's metadata, once decoded (buffered)
	done   chan struct{}     // closed when list or err is set
	list   *list[T]
	err    error
	cancel context.CancelFunc
}

func (r *Resource[T]) fetchPage(ctx context.Context, opts ListOptions) *pageFetch[T] {
	ctx, cancel := context.WithCancel(ctx)
	f := &pageFetch[T]{meta: make(chan api.ListMeta, 1), done: make(chan struct{}), cancel: cancel}
	go func() {
		defer close(f.done)
		defer cancel()
		sent := false
		f.list, f.err = r.list(ctx, opts, func(m api.ListMeta) {
			if !sent {
				sent = true
				f.meta <- m
			}
		})
	}()
	return f
}

// stop ends the page's request, if any, and waits for its goroutine.
func (f *pageFetch[T]) stop() {
	if f != nil {
		f.cancel()
		<-f.done
	}
}

// ListAll reads every page (opts.Limit items each, DefaultPageSize when 0)
// and returns all items at one resourceVersion. When the server expires the
// continue token of a later page (410), it lists everything in one request
// at the requested resourceVersion instead, as client-go's pager does with
// FullListIfExpired.
func (r *Resource[T]) ListAll(ctx context.Context, opts ListOptions) ([]T, string, error) {
	var all []T
	pages := 0
	rv, err := r.ListPages(ctx, opts, func(items []T) error {
		pages++
		all = append(all, items...)
		return nil
	})
	if err != nil && pages > 0 && IsExpired(err) {
		full := opts
		full.Limit = 0
		items, rv, _, err := r.List(ctx, full)
		return items, rv, err
	}
	if err != nil {
		return nil, "", err
	}
	return all, rv, nil
}

// Create creates obj and returns it as stored.
func (r *Resource[T]) Create(ctx context.Context, obj T, opts WriteOptions) (T, error) {
	return r.write(ctx, http.MethodPost, r.path(r.objectNamespace(obj), ""), obj, opts)
}

// Update replaces obj (name from its metadata); a resourceVersion in it
// makes the update conditional (409 Conflict when it is not current).
func (r *Resource[T]) Update(ctx context.Context, obj T, opts WriteOptions) (T, error) {
	p, err := r.objectPath(r.objectNamespace(obj), obj.GetName())
	if err != nil {
		var zero T
		return zero, err
	}
	return r.write(ctx, http.MethodPut, p, obj, opts)
}

func (r *Resource[T]) write(ctx context.Context, method, path string, obj T, opts WriteOptions) (T, error) {
	if r.metadataOnly {
		var zero T
		return zero, ErrMetadataOnly
	}
	body, err := json.Marshal(obj)
	if err != nil {
		var zero T
		return zero, fmt.Errorf("encoding %T: %w", obj, err)
	}
	return r.call(ctx, &request{method: method, path: path, query: opts.values(), body: body})
}

// Patch changes the named object with a patch of type pt.
func (r *Resource[T]) Patch(ctx context.Context, name string, pt PatchType, patch []byte, opts PatchOptions) (T, error) {
	return r.patch(ctx, r.namespace, name, "", pt, patch, opts)
}

// patch sends a patch to the named object in namespace, or to its
// subresource when sub is not "".
func (r *Resource[T]) patch(ctx context.Context, namespace, name, sub string, pt PatchType, patch []byte, opts PatchOptions) (T, error) {
	p, err := r.objectPath(namespace, name)
	if err != nil {
		var zero T
		return zero, err
	}
	if sub != "" {
		p += "/" + sub
	}
	q := opts.values()
	if opts.Force {
		q.Set("force", "true")
	}
	return r.call(ctx, &request{
		method: http.MethodPatch, path: p, query: q, accept: r.objectAccept(),
		contentType: string(pt), body: patch,
	})
}

// deleteOptions is DeleteOptions on the wire.
type deleteOptions struct {
	api.TypeMeta       `json:",inline"`
	Preconditions      *Preconditions `json:"preconditions,omitempty"`
	PropagationPolicy  string         `json:"propagationPolicy,omitempty"`
	GracePeriodSeconds *int64         `json:"gracePeriodSeconds,omitempty"`
	DryRun             []string       `json:"dryRun,omitempty"`
}

// Delete deletes the named object. An object with finalizers is only
// marked for deletion; the server removes it when they are gone.
func (r *Resource[T]) Delete(ctx context.Context, name string, opts DeleteOptions) error {
	p, err := r.objectPath(r.namespace, name)
	if err != nil {
		return err
	}
	body, err := json.Marshal(opts.wire())
	if err != nil {
		return fmt.Errorf("encoding delete options: %w", err)
	}
	_, err = r.c.do(ctx, &request{method: http.MethodDelete, path: p, body: body})
	return err
}

func (o DeleteOptions) wire() deleteOptions {
	w := deleteOptions{
		TypeMeta:           api.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"},
		PropagationPolicy:  o.PropagationPolicy,
		GracePeriodSeconds: o.GracePeriodSeconds,
	}
	if o.Preconditions != (Preconditions{}) {
		w.Preconditions = &o.Preconditions
	}
	if o.DryRun {
		w.DryRun = []string{"All"}
	}
	return w
}

// Watch opens a watch on the resource from opts.ResourceVersion ("" or
// "0": the current state first, as ADDED events). A T of k8s.io/api is
// watched in protobuf when the server offers it, as its lists are.
func (r *Resource[T]) Watch(ctx context.Context, opts ListOptions) (Watch[T], error) {
	return openWatch(ctx, r.c, r.watchRequest(opts, r.streamAccept(mediaPartial)), r.protoDecode)
}

// The metadata-only forms a Resource[*api.PartialObjectMetadata] asks for,
// in JSON, as client-go's metadata client does (which also offers
// protobuf): an object's (for a get, a patch and a watch's events), a
// list's, and whole objects from a server without them.
const (
	mediaPartial     = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1," + mediaJSON
	mediaPartialList = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + mediaJSON
)

// streamAccept is what a list or a watch asks for: the metadata-only form
// partial, protobuf when T is a k8s.io/api type, or JSON.
func (r *Resource[T]) streamAccept(partial string) string {
	switch {
	case r.metadataOnly:
		return partial
	case r.protoDecode != nil:
		return acceptProtobuf
	}
	return mediaJSON
}

// objectAccept is what a read or a patch of one object asks for ("": JSON).
func (r *Resource[T]) objectAccept() string {
	if r.metadataOnly {
		return mediaPartial
	}
	return ""
}

func (r *Resource[T]) watchRequest(opts ListOptions, accept string) *request {
	q := opts.Values()
	q.Set("watch", "true")
	return &request{method: http.MethodGet, path: r.path(r.namespace, ""), query: q, accept: accept}
}

// GetTable reads one object in the Table form kubectl prints (one row).
func (r *Resource[T]) GetTable(ctx context.Context, name string) (*api.Table, error) {
	p, err := r.objectPath(r.namespace, name)
	if err != nil {
		return nil, err
	}
	resp, err := r.c.do(ctx, &request{method: http.MethodGet, path: p, accept: MediaTable})
	if err != nil {
		return nil, err
	}
	return decodeTable(resp.body)
}

// ListTable reads one page in the Table form; the next page's continue
// token is in its metadata.
func (r *Resource[T]) ListTable(ctx context.Context, opts ListOptions) (*api.Table, error) {
	resp, err := r.c.do(ctx, &request{method: http.MethodGet, path: r.path(r.namespace, ""), query: opts.Values(), accept: MediaTable})
	if err != nil {
		return nil, err
	}
	return decodeTable(resp.body)
}

// WatchTable watches in the Table form, as `kubectl get -w`: each event's
// object is a one-row Table, the first with the column definitions.
func (r *Resource[T]) WatchTable(ctx context.Context, opts ListOptions) (Watch[*api.Table], error) {
	return openWatch[*api.Table](ctx, r.c, r.watchRequest(opts, MediaTable), nil)
}

// decodeTable decodes a Table, refusing another kind (a server that does not
// serve tables answers with the plain object).
func decodeTable(data []byte) (*api.Table, error) {
	t, err := decode[*api.Table](data)
	if err != nil {
		return nil, err
	}
	if t.Kind != "Table" {
		return nil, fmt.Errorf("the server answered a %q instead of a Table", t.Kind)
	}
	return t, nil
}
