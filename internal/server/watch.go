package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream"
)

// watchRequest is a watch's parameters, parsed and validated.
type watchRequest struct {
	opts      watchcache.WatchOptions
	bookmarks bool
	timeout   time.Duration
	// fresh is the store revision the initial state must reflect (0: any).
	fresh int64
	ws    *watchstream.Upgrade // a WebSocket upgrade's answer, if one was asked for
}

// parseWatch reads a watch's query as kube-apiserver validates it.
func (q *request) parseWatch() (watchRequest, error) {
	v := q.r.URL.Query()
	var wr watchRequest
	rv := v.Get("resourceVersion")
	n, err := registry.ParseResourceVersion(rv)
	if err != nil {
		return wr, apierror.BadRequest(err.Error())
	}
	if err := validateWatchMatch(v.Get("resourceVersionMatch"), v.Get("sendInitialEvents")); err != nil {
		return wr, err
	}
	list, err := parseListOptions(withoutWatchParams(v), q.res)
	if err != nil {
		return wr, err
	}
	wr.opts.Filter = watchcache.Filter{Namespace: q.info.Namespace, Labels: list.Labels, Fields: list.Fields}
	if q.info.Name != "" {
		if wr.opts.Filter.Fields, err = nameSelector(q.info.Name, list.Fields); err != nil {
			return wr, err
		}
	}
	wr.bookmarks = boolParam(v, "allowWatchBookmarks")
	sendInitial := v.Get("sendInitialEvents")
	switch {
	case sendInitial == "true":
		wr.opts.InitialEvents, wr.opts.InitialEventsEnd = true, wr.bookmarks
		wr.fresh = n
	case sendInitial == "false":
		wr.opts.From = n
	case rv == "" || rv == "0":
		wr.opts.InitialEvents = true // "get state and start at most recent / any"
	default:
		wr.opts.From = n
	}
	switch {
	case rv == "" && wr.opts.InitialEvents:
		wr.fresh = -1 // as fresh as the store, for a consistent start
	case wr.opts.From > 0:
		// A resourceVersion the store has not reached (a client's bug, or
		// a store restored from a backup) is kube's 504 "Too large
		// resource version" after the same bounded wait as a list's, so
		// that the client relists; kube-apiserver's cache instead keeps
		// such a watch open and silently skips every event up to it.
		wr.fresh = wr.opts.From
	}
	wr.timeout, err = q.s.watchTimeout(v)
	return wr, err
}

// validateWatchMatch applies kube's rules on resourceVersionMatch and
// sendInitialEvents for watch; these 422s are what client-go falls back on.
func validateWatchMatch(match, sendInitial string) error {
	invalid := func(field, msg string) error {
		return apierror.Invalid("meta.k8s.io", "ListOptions", "", []api.StatusCause{apierror.Field(api.CauseTypeFieldValueForbidden, field, msg)})
	}
	switch {
	case sendInitial != "" && sendInitial != "true" && sendInitial != "false":
		return apierror.BadRequest(fmt.Sprintf("invalid sendInitialEvents %q", sendInitial))
	case match != "" && sendInitial == "":
		return invalid("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided")
	case sendInitial != "" && match != "NotOlderThan":
		return invalid("resourceVersionMatch", "Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan")
	}
	return nil
}

// withoutWatchParams drops what parseListOptions would reject in a watch.
func withoutWatchParams(v map[string][]string) map[string][]string {
	out := make(map[string][]string, len(v))
	for k, vals := range v {
		switch k {
		case "resourceVersion", "resourceVersionMatch", "sendInitialEvents", "limit", "continue":
		default:
			out[k] = vals
		}
	}
	return out
}

// watchTimeout is timeoutSeconds, or kube's randomised [min, 2*min) so
// that long watches spread out and rebalance.
func (s *Server) watchTimeout(q url.Values) (time.Duration, error) {
	d, err := timeoutSeconds(q)
	if err != nil || d > 0 {
		return d, err
	}
	min := s.cfg.MinRequestTimeout
	return min + time.Duration(rand.Int64N(int64(min))), nil
}

// watch serves a watch over the negotiated transport.
func (q *request) watch() {
	wr, err := q.parseWatch()
	if err == nil && q.isWebSocket() {
		wr.ws, err = q.webSocketHandshake()
	}
	if err != nil {
		q.fail(err)
		return
	}
	deadline := time.Now().Add(wr.timeout)
	st := q.s.streams.Open(q.w, q.r, q.streamOptions(wr))
	st.WatchOptions(&wr.opts)
	w, err := q.startWatch(wr, deadline)
	if errors.Is(err, errRedefined) {
		q.watchRedefined()
		return
	}
	if err != nil {
		q.fail(err)
		return
	}
	if err := st.Serve(w, deadline); err != nil {
		q.fail(apierror.Internal(err))
	}
}

// startWatch waits until the cache is fresh enough for wr and registers
// its watcher.
func (q *request) startWatch(wr watchRequest, deadline time.Time) (*watchcache.Watcher, error) {
	c, err := q.watchCache()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithDeadline(q.r.Context(), deadline)
	defer cancel()
	notReady := func(err error) error {
		return apierror.TooManyRequests(fmt.Sprintf("the watch cache is not ready: %v", err), 1)
	}
	// As kube's cacher: one that cannot serve (a conversion failing) is a
	// 429 before any wait for freshness.
	if err := c.WaitReady(ctx); err != nil {
		return nil, notReady(err)
	}
	if err := q.s.waitFresh(ctx, c, wr.fresh); err != nil {
		return nil, err
	}
	w, err := c.Watch(ctx, wr.opts)
	if err != nil {
		return nil, notReady(err)
	}
	return w, nil
}

// errRedefined: the request's resource was redefined (its
// CustomResourceDefinition changed) after the request was prepared.
var errRedefined = errors.New("the resource was redefined")

// watchCache returns the cache of the request's resource. When the
// resource's definition changed while the request was in flight (a
// CustomResourceDefinition deleted or redefined), it answers as
// kube-apiserver would: 404 for a resource no longer served; errRedefined
// for one redefined, which the request then serves with the new
// definition, once.
func (q *request) watchCache() (*watchcache.Cache, error) {
	if c := q.s.caches.get(q.res); c != nil {
		return c, nil
	}
	cur, ok := q.s.catalog.Get(q.res.Group, q.res.Version, q.res.Plural)
	switch {
	case !ok:
		return nil, resourceNotFound(q.res)
	case cur == q.res:
		return nil, apierror.TooManyRequests("the server is shutting down", 1)
	case q.redefined:
		return nil, apierror.TooManyRequests(fmt.Sprintf("the definition of %s is changing", q.res.GroupResource()), 1)
	}
	return nil, errRedefined
}

// watchRedefined serves a watch whose resource was redefined after it was
// prepared: prepared again from the new definition (its scope, its field
// selectors, its output), as a request made now would be.
func (q *request) watchRedefined() {
	again, err := q.s.newRequest(q.w, q.r, q.info)
	if err != nil {
		q.fail(err)
		return
	}
	again.redefined = true
	again.watch()
}

// resourceNotFound is kube-apiserver's 404 for a resource it does not
// serve, naming it.
func resourceNotFound(res *resource.Resource) *api.StatusError {
	e := apierror.NotFound(apierror.Target{Group: res.Group, Resource: res.Plural})
	e.Status.Message = fmt.Sprintf("the server could not find the requested resource (watch %s)", res.GroupResource())
	return e
}

// waitFresh waits (bounded, as kube's 3 s) until the cache reflects the
// store at rev; rev -1 means the store's current revision.
func (s *Server) waitFresh(ctx context.Context, c *watchcache.Cache, rev int64) error {
	if rev == 0 {
		return nil
	}
	if rev < 0 {
		cur, err := s.cfg.Storage.CurrentRevision(ctx)
		if err != nil {
			return apierror.Internal(err)
		}
		rev = cur
	}
	wctx, cancel := context.WithTimeout(ctx, freshnessWait)
	defer cancel()
	if err := c.WaitFresh(wctx, rev); err != nil {
		return tooLargeResourceVersion(rev, c.Revision())
	}
	return nil
}

// freshnessWait bounds waits for the cache to catch up, as kube-apiserver's
// 3 s blockTimeout.
const freshnessWait = 3 * time.Second

func tooLargeResourceVersion(asked, current int64) *api.StatusError {
	e := apierror.Timeout(fmt.Sprintf("Too large resource version: %d, current: %d", asked, current), 1)
	e.Status.Details.Causes = []api.StatusCause{{Type: api.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return e
}

// nameSelector adds metadata.name=name to a field selector, for watches of
// one object by path.
func nameSelector(name string, fields selector.Fields) (selector.Fields, error) {
	s := "metadata.name=" + selector.EscapeFieldValue(name)
	if f := fields.String(); f != "" {
		s += "," + f
	}
	f, err := selector.ParseFields(s)
	if err != nil {
		return f, apierror.BadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	return f, nil
}

// bookmarkObject is the object of a BOOKMARK: kind, apiVersion and resourceVersion only.
func bookmarkObject(apiVersion, kind string, rev int64, initialEnd bool) []byte {
	md := map[string]any{"resourceVersion": strconv.FormatInt(rev, 10)}
	if initialEnd {
		md["annotations"] = map[string]string{api.InitialEventsEndAnnotation: "true"}
	}
	b, _ := json.Marshal(map[string]any{"kind": kind, "apiVersion": apiVersion, "metadata": md})
	return b
}
