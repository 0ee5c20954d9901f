package server

import (
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// serveResource handles a request on a resource, an object or its status.
func (s *Server) serveResource(w http.ResponseWriter, r *http.Request, info requestInfo) {
	q, err := s.newRequest(w, r, info)
	if err != nil {
		writeError(w, err)
		return
	}
	q.serve()
}

// newRequest prepares a request from its resource's current definition:
// the resource, the request's options and the negotiated output.
func (s *Server) newRequest(w http.ResponseWriter, r *http.Request, info requestInfo) (*request, error) {
	res, ok := s.catalog.Get(info.Group, info.Version, info.Resource)
	if !ok || (info.Namespace != "" && !res.Namespaced) {
		return nil, notFoundPath()
	}
	sub, other := res.Subresource(info.Subresource)
	switch {
	case other && !slices.Contains(sub.Verbs, info.Verb):
		return nil, apierror.MethodNotAllowed(r.Method, res.GroupResource()+"/"+sub.Name)
	case info.Subresource != "" && !other && !res.WritesPart(info.Subresource):
		return nil, notFoundPath()
	case info.Subresource != "" && !other && !slices.Contains(res.PartVerbs(info.Subresource), info.Verb):
		// A part's storage has no Delete (nor list): kube answers 405.
		return nil, apierror.MethodNotAllowed(r.Method, res.GroupResource()+"/"+info.Subresource)
	case info.Verb == "deletecollection" && !slices.Contains(res.ServedVerbs(), info.Verb):
		return nil, methodNotServed()
	}
	if res.CreateOnly && (info.Name != "" || res.Namespaced && info.Namespace == "") {
		return nil, notFoundPath() // only the collection's POST is served
	}
	r, err := withFieldValidation(w, r)
	if err == nil {
		r, err = withDryRun(r)
	}
	if err != nil {
		return nil, err
	}
	forms := func(as, g, v string) bool { return tableOK(as, g, v) || partialOK(as, g, v) }
	pb := protobufFor(res)
	if res.CreateOnly {
		forms = func(string, string, string) bool { return false } // nothing to list
	}
	if other { // the subresource's own kind
		forms = func(string, string, string) bool { return false }
		if info.Subresource == resource.ScaleSubresource.Name && res.Scale != nil && res.Scale.Columns != nil {
			forms = tableOK // kube's scale table convertor
		}
		pb = protobuf.Supports(strings.TrimPrefix(sub.Group+"/"+sub.Version, "/"), sub.Kind)
	}
	out, ok := negotiate(r.Header.Get("Accept"), pb, forms)
	if !ok {
		return nil, apierror.NotAcceptable([]string{mediaJSON, mediaYAML, mediaProtobuf})
	}
	return &request{s: s, w: w, r: r, info: info, res: res, out: out}, nil
}

// serve serves the request's verb.
func (q *request) serve() {
	defer func() { q.s.quotaInflight.add(q.info.Namespace, -q.charged) }()
	if q.res.CreateOnly {
		if isBindings(q.res) && q.info.Verb == "create" {
			q.bindLegacy()
			return
		}
		q.review()
		return
	}
	if q.info.Subresource == resource.ScaleSubresource.Name {
		q.serveScale()
		return
	}
	switch q.info.Verb {
	case "get":
		q.get()
	case "list":
		q.list()
	case "watch":
		q.watch()
	case "create":
		switch q.info.Subresource {
		case tokenSubresource.Name:
			q.createToken()
			return
		case bindingSubresource.Name:
			q.bind()
			return
		case evictionSubresource.Name:
			q.evict()
			return
		}
		q.create()
	case "update":
		q.update()
	case "patch":
		q.patch()
	case "delete":
		q.delete()
	case "deletecollection":
		q.deleteCollection()
	default:
		q.fail(apierror.MethodNotAllowed(q.r.Method, q.res.GroupResource()))
	}
}

// tableOK accepts the Table forms kubectl asks for.
func tableOK(as, group, version string) bool {
	return as == "Table" && group == "meta.k8s.io" && (version == "v1" || version == "v1beta1")
}

// request is one resource request being served.
type request struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	info requestInfo
	res  *resource.Resource
	out  output
	// redefined is set on a watch prepared again because its resource's
	// definition changed under it, which it may be only once.
	redefined bool
	warn      *apierror.Warnings // the response's, once one is added
	// charged counts the quota charges of the request's write, in flight
	// until the request ends.
	charged int
}

// warnings are the response's Warning headers, one Warnings for the whole
// request so that each text is written once, as kube's recorder does.
func (q *request) warnings() *apierror.Warnings {
	if q.warn == nil {
		q.warn = apierror.NewWarnings(q.w.Header())
	}
	return q.warn
}

func (q *request) fail(err error) { writeError(q.w, apierror.From(err)) }

// respond writes one object (as a one-row Table, or its metadata, if
// asked; a Status goes out as it is, as kube's transformObject leaves it).
func (q *request) respond(code int, obj api.Object) {
	switch {
	case q.out.as == "Table":
		writeAs(q.w, code, q.out, toTable(q.res, []api.Object{obj}, q.r.URL.Query().Get("includeObject")))
		return
	case q.out.partial() && (obj.Kind() != "Status" || obj.APIVersion() != "v1"):
		if q.out.as == asPartialList {
			q.fail(partialMismatch(q.res, false))
			return
		}
		obj = partialObject(q.out.asGV, obj)
	}
	writeAs(q.w, code, q.out, obj)
}

// respondWritten writes an object a write returned: as plain JSON, the
// stored bytes with its resourceVersion spliced in (no second encoding).
func (q *request) respondWritten(code int, w registry.Written) {
	if !q.writeStored(code, w.Stored) {
		q.respond(code, w.Object)
	}
}

// writeStored writes the object kv holds straight from its stored bytes
// when the response is plain JSON and the bytes allow it (registry.JSON);
// it reports false, having written nothing, otherwise.
func (q *request) writeStored(code int, kv storage.KV) bool {
	if q.out != (output{mediaType: mediaJSON}) {
		return false
	}
	b, ok := registry.JSON(q.res, kv)
	if ok {
		writeJSONBytes(q.w, code, mediaJSON, b)
	}
	return ok
}

func (q *request) get() {
	if err := q.getFresh(); err != nil {
		q.fail(err)
		return
	}
	kv, err := q.s.registry.GetStored(q.r.Context(), q.res, q.info.Namespace, q.info.Name)
	if err != nil {
		q.fail(err)
		return
	}
	if q.writeStored(http.StatusOK, kv) {
		return
	}
	obj, err := registry.Decode(q.r.Context(), q.res, kv)
	if err != nil {
		q.fail(err)
		return
	}
	q.respond(http.StatusOK, obj)
}

// getFresh checks a get's resourceVersion, as kube's cacher.Get: 400 if
// malformed; one the store has not reached is waited for, as long as a
// list's, then kube's 504 "Too large resource version". The store then
// serves the get, at least as fresh as asked.
func (q *request) getFresh() error {
	rv, err := registry.ParseResourceVersion(q.r.URL.Query().Get("resourceVersion"))
	if err != nil {
		return apierror.BadRequest(err.Error())
	}
	if rv == 0 {
		return nil
	}
	if c := q.s.caches.get(q.res); c != nil {
		return q.s.waitFresh(q.r.Context(), c, rv)
	}
	return nil // no cache (the server closing): the store is as fresh as it gets
}

func (q *request) list() {
	opts, err := parseListOptions(q.r.URL.Query(), q.res)
	if err != nil {
		q.fail(err)
		return
	}
	if ok, fresh := fromCache(q.r.URL.Query(), opts); ok && q.listCached(opts, fresh) {
		return
	}
	result, err := q.s.registry.List(q.r.Context(), q.res, q.info.Namespace, opts)
	if err != nil {
		q.fail(err)
		return
	}
	q.writeList(api.ListMeta{ResourceVersion: formatRV(result.ResourceVersion), Continue: result.Continue}, result.Items)
}

// writeList writes a list, its Table or its metadata.
func (q *request) writeList(meta api.ListMeta, items []api.Object) {
	switch q.out.as {
	case "Table":
		t := toTable(q.res, items, q.r.URL.Query().Get("includeObject"))
		t.ListMeta = meta
		writeAs(q.w, http.StatusOK, q.out, t)
		return
	case asPartial:
		q.fail(partialMismatch(q.res, true))
		return
	case asPartialList:
		writeAs(q.w, http.StatusOK, q.out, partialList(q.out.asGV, meta, items))
		return
	}
	writeAs(q.w, http.StatusOK, q.out, listOf(q.res, meta, items))
}

func (q *request) create() {
	obj, err := q.s.readObject(q.r, q.res.Kind)
	if err != nil {
		q.fail(err)
		return
	}
	if q.info.Name != "" || q.info.Subresource != "" {
		writeError(q.w, apierror.MethodNotAllowed(q.r.Method, q.res.GroupResource()+" "+q.info.Name))
		return
	}
	q.insert(obj)
}

// insert creates obj and answers 201.
func (q *request) insert(obj api.Object) {
	if err := q.recordCreate(obj); err != nil {
		q.fail(err)
		return
	}
	obj, err := q.mutate(obj, nil)
	if err == nil && q.info.Name != "" {
		err = q.sameName(obj) // a PUT's: a mutating webhook may have renamed it
	}
	if err == nil {
		err = q.checkWrite(obj, nil)
	}
	if err != nil {
		q.fail(err)
		return
	}
	created, err := q.s.registry.Create(q.admitting(q.r.Context()), q.res, q.info.Namespace, obj)
	if err != nil {
		q.fail(err)
		return
	}
	q.s.afterWrite(q.res, created.Object)
	q.respondWritten(http.StatusCreated, created)
}

func (q *request) update() {
	obj, err := q.s.readObject(q.r, q.res.Kind)
	if err == nil {
		err = q.sameName(obj) // first, as kube's update handler: no part reads a nameless object
	}
	if err != nil {
		q.fail(err)
		return
	}
	if q.res.CreateOnUpdate && q.info.Subresource == "" {
		// As kube's AllowCreateOnUpdate: a PUT of what does not exist
		// creates it (one created meanwhile answers 409).
		_, err := q.s.registry.GetStored(q.r.Context(), q.res, q.info.Namespace, q.info.Name)
		if isReason(err, api.StatusReasonNotFound) {
			q.insert(obj)
			return
		}
	}
	q.applyUpdate(q.recorded(func(cur api.Object) (api.Object, error) {
		return q.part(cur, obj), nil
	}))
}

// part is what a write of next through the request's subresource makes
// of cur, with next's resourceVersion (a precondition when set): a status
// subresource's writes change the status and what metadata the kind's
// status strategy takes (StatusWrite), and a resource's Parts say what
// theirs change. Without a subresource it is next.
func (q *request) part(cur, next api.Object) api.Object {
	if !q.res.WritesPart(q.info.Subresource) {
		return next
	}
	kept := q.res.WritePart(q.info.Subresource, cur, next)
	kept.SetMeta("resourceVersion", next.ResourceVersion())
	return kept
}

// applyUpdate runs an update (PUT or PATCH) and writes the response.
func (q *request) applyUpdate(fn registry.UpdateFunc) {
	res := q.res
	if q.res.WritesPart(q.info.Subresource) {
		res = partResource(res, q.info.Subresource)
	}
	updated, err := q.s.registry.Update(q.admitting(q.r.Context()), res, q.info.Namespace, q.info.Name, func(cur api.Object) (api.Object, error) {
		next, err := fn(cur)
		if err == nil {
			next, err = q.mutate(next, cur)
		}
		if err == nil {
			// Again after mutating admission, as kube's PrepareForUpdate
			// runs after it: what a webhook or policy changed outside
			// the part is dropped.
			next = q.part(cur, next)
			err = q.checkWrite(next, cur)
		}
		return next, err
	})
	if err != nil {
		q.fail(err)
		return
	}
	if updated.Deleted != nil {
		q.s.afterWrite(q.res, updated.Deleted)
	} else {
		q.s.afterWrite(q.res, updated.Object)
	}
	q.respondWritten(http.StatusOK, updated)
}

// partResource is res as writes through its status subresource or its
// part sub see it.
func partResource(res *resource.Resource, sub string) *resource.Resource {
	v := partView(res)
	part := res.Parts[sub]
	if part.ValidateUpdate != nil {
		v.Validate, v.ValidateCreate, v.ValidateUpdate = nil, nil, part.ValidateUpdate
	}
	if part.Prepare != nil {
		v.Prepare = part.Prepare
	}
	v.Generation = res.Generation && part.Generation
	return v
}

// partView is res as its status subresource (or another of its parts)
// writes it: status may change, nothing else does (the update function
// keeps the rest), the generation stays, as a status write never bumps it,
// and a built-in kind's status rules replace its spec's.
func partView(res *resource.Resource) *resource.Resource {
	v := *res
	v.StatusSubresource = false
	v.Generation = false
	v.Allocate = nil // as kube's status stores, which have no BeginUpdate
	if res.ValidateStatusUpdate != nil {
		v.Validate, v.ValidateCreate, v.ValidateUpdate = nil, nil, res.ValidateStatusUpdate
	}
	return &v
}

func (q *request) delete() {
	opts, err := q.s.readDeleteOptions(q.r)
	if err != nil {
		q.fail(err)
		return
	}
	obj, gone, err := q.s.registry.Delete(q.admitting(opts.context(q.r)), q.res, q.info.Namespace, q.info.Name, opts.registry())
	if err != nil {
		q.fail(err)
		return
	}
	q.s.afterWrite(q.res, obj)
	// kube answers 202 for an object left in place only when the client
	// asked for cascading with the deprecated orphanDependents=false.
	code := http.StatusOK
	if !gone && opts.OrphanDependents != nil && !*opts.OrphanDependents {
		code = http.StatusAccepted
	}
	if gone && !q.res.ReturnDeletedObject {
		writeAs(q.w, code, q.out, deletedStatus(q.res, obj))
		return
	}
	q.respond(code, obj)
}

// deletedStatus is kube-apiserver's answer to the delete of an object of a
// kind whose storage does not return it (finalizeDelete in its generic
// registry): Success, with details naming the object by its resource.
func deletedStatus(res *resource.Resource, obj api.Object) api.Status {
	s := api.Status{TypeMeta: api.TypeMeta{APIVersion: "v1", Kind: "Status"}, Status: api.StatusSuccess}
	s.Details = &api.StatusDetails{Name: obj.Name(), Group: res.Group, Kind: res.Plural, UID: obj.UID()}
	return s
}

func (q *request) deleteCollection() {
	lopts, err := parseListOptions(q.r.URL.Query(), q.res)
	if err != nil {
		q.fail(err)
		return
	}
	opts, err := q.s.readDeleteOptions(q.r)
	if err != nil {
		q.fail(err)
		return
	}
	list, deleted, err := q.s.registry.DeleteCollection(q.admitting(opts.context(q.r)), q.res, q.info.Namespace, lopts, opts.registry())
	for _, obj := range deleted {
		q.s.afterWrite(q.res, obj)
	}
	if err != nil {
		q.fail(err)
		return
	}
	meta := api.ListMeta{ResourceVersion: strconv.FormatInt(list.ResourceVersion, 10), Continue: list.Continue}
	writeAs(q.w, http.StatusOK, q.out, listOf(q.res, meta, list.Items))
}

// objectList is a list of objects as the wire has it (items never null).
type objectList struct {
	api.TypeMeta `json:",inline"`
	ListMeta     api.ListMeta `json:"metadata"`
	Items        []api.Object `json:"items"`
}

func listOf(res *resource.Resource, meta api.ListMeta, items []api.Object) objectList {
	if items == nil {
		items = []api.Object{}
	}
	return objectList{api.TypeMeta{APIVersion: res.APIVersion(), Kind: res.ListKind}, meta, items}
}
