package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authn"
)

// The filters every request passes, outermost first:
//
//	observe         access log line and request metrics, for every response (401 and 429 too)
//	screen          403 for a Host or Origin that is not loopback when Config.LoopbackOnly;
//	                400 or 404 for a path ServeMux would clean and redirect
//	authenticate    401 unless an authenticator accepts it (health checks are open)
//	auditRequests   the audit log's events, as kube's WithAudit (audit.go)
//	impersonate     the user of Impersonate-* headers, each authorized (impersonate.go)
//	authorize       403 unless Config.Authorizer allows it (authorize.go; health checks are open)
//	readAhead       a write's body read, under its deadline, before it takes a slot
//	limitInFlight   429 beyond the in-flight limits (watches and health checks are exempt)
//	routes          s.mux
func (s *Server) filters(h http.Handler) http.Handler {
	return s.observe(s.screen(s.authenticate(s.auditRequests(s.impersonate(s.authorize(s.readAhead(s.limitInFlight(h))))))))
}

// Defaults of the in-flight limits, as kube-apiserver's.
const (
	defaultMaxRequestsInFlight         = 400
	defaultMaxMutatingRequestsInFlight = 200
)

// anonymous is the user of every request when no authenticator is
// configured, and of unauthenticated health checks, as kube names it.
var anonymous = &authn.User{Name: authn.Anonymous, Groups: []string{authn.AllUnauthenticated}}

// openPaths are served without authentication, so that probes and load
// balancers need no credentials.
var openPaths = map[string]bool{"/healthz": true, "/livez": true, "/readyz": true}

// note is what the filters learn of a request, for the access log.
type note struct {
	info  requestInfo
	isAPI bool // info is an API path's
	user  *authn.User
	start time.Time
	// detached says another goroutine answers the request after its
	// handler returns (a detached watch), and logs it when it is over.
	detached bool
	// audit is the request's audit event, if the policy logs it.
	audit *auditRecord
}

type noteKey struct{}

func noteOf(r *http.Request) *note {
	n, _ := r.Context().Value(noteKey{}).(*note)
	return n
}

// requestInfoOf returns what the observe filter already parsed of r's path,
// so that a request is parsed once; without the filter it parses r.
func requestInfoOf(r *http.Request) (requestInfo, bool) {
	if n := noteOf(r); n != nil {
		return n.info, n.isAPI
	}
	return parseRequest(r)
}

// observe logs one line per request when it ends (watches too, detached
// ones when their stream ends) and records the request metrics.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := &note{start: time.Now()}
		n.info, n.isAPI = parseRequest(r)
		rec := &recorder{ResponseWriter: w}
		next.ServeHTTP(rec, r.WithContext(context.WithValue(r.Context(), noteKey{}, n)))
		if !n.detached {
			s.requestLog(r, n).end(r.Context(), rec.status(), rec.bytes)
		}
	})
}

// detachRequest marks r as answered by another goroutine after its handler
// returns (watchstream.Config.Detach); that goroutine calls the result
// with the body's size when the response is over.
func (s *Server) detachRequest(r *http.Request) func(written int64) {
	l := requestLog{s: s, start: time.Now()}
	if n := noteOf(r); n != nil {
		n.detached = true
		l = s.requestLog(r, n)
		if l.audit = n.audit; l.audit != nil {
			l.audit.started(http.StatusOK, "")
		}
	}
	return func(written int64) { l.end(context.Background(), http.StatusOK, written) }
}

// requestLog is what the access log and the request metrics say of a
// request, taken from it so that a detached one does not keep it.
type requestLog struct {
	s                                          *Server
	labels                                     metrics.Request
	method, path, verb, resource, user, remote string
	start                                      time.Time
	audit                                      *auditRecord // a detached request's, completed by end
}

func (s *Server) requestLog(r *http.Request, n *note) requestLog {
	l := requestLog{
		s: s, labels: s.metricLabels(r, n), method: r.Method, path: r.URL.Path, verb: logVerb(r, n),
		resource: n.info.Resource, remote: r.RemoteAddr, start: n.start,
	}
	if n.user != nil {
		l.user = n.user.Name
	}
	return l
}

// end writes the access log line and records the request metrics.
func (l requestLog) end(ctx context.Context, code int, bytes int64) {
	elapsed := time.Since(l.start)
	if l.audit != nil { // on a watch's sender: it must not wait for the write
		l.audit.complete(false)
	}
	l.s.metrics.ObserveRequest(l.labels, code, elapsed)
	line := requestLine{
		method: l.method, path: l.path, verb: l.verb, resource: l.resource, code: code,
		duration: elapsed, bytes: bytes, user: l.user, remote: l.remote,
	}
	if l.s.access != nil && l.s.access.logRequest(ctx, &line) {
		return
	}
	l.s.requests.LogAttrs(ctx, slog.LevelInfo, "request", line.attrs()...)
}

// logVerb is kube's verb of an API request, else the method.
func logVerb(r *http.Request, n *note) string {
	if n.info.Verb != "" {
		return n.info.Verb
	}
	return r.Method
}

// screen refuses, before anything else reads it, a request a web page may
// have sent (Config.LoopbackOnly: loopbackOnly), and a path the routes
// must not see (pathError).
func (s *Server) screen(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.cfg.LoopbackOnly {
			if err := loopbackOnly(r); err != nil {
				writeError(w, err)
				return
			}
		}
		if err := pathError(noteOf(r).info); err != nil {
			writeError(w, err)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// loopbackOnly refuses a request whose Host is not loopback (a DNS name
// rebound to 127.0.0.1) or that a web page of another origin sent: a
// browser lets any page open a WebSocket to 127.0.0.1 and read it, and
// says which page in Origin.
func loopbackOnly(r *http.Request) error {
	refuse := func(what, value string) error {
		return apierror.Forbidden(fmt.Sprintf("%s %q is not allowed: anonymous requests are served to loopback names and addresses only", what, value))
	}
	if !loopbackHost(r.Host) {
		return refuse("host", r.Host)
	}
	if origin := r.Header.Get("Origin"); origin != "" {
		if u, err := url.Parse(origin); err != nil || !loopbackHost(u.Host) {
			return refuse("origin", origin)
		}
	}
	return nil
}

// loopbackHost says whether a Host header names this machine's loopback:
// localhost or a loopback address, with any port.
func loopbackHost(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	} else {
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// authenticate answers 401 to a request no authenticator accepts, unless
// it is a health check; it puts the user in the request's context.
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if noteOf(r).info.Verb == "watch" && webSocketHandshake(r) {
			r = r.WithContext(authn.WithWebSocketWatch(r.Context()))
		}
		user, err := s.user(r)
		if err != nil {
			s.log.Debug("unauthenticated request", "path", r.URL.Path, "remote", r.RemoteAddr, "err", err)
			s.auditUnauthenticated(w, r)
			writeError(w, apierror.Unauthorized())
			return
		}
		noteOf(r).user = user
		next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), user)))
	})
}

// webSocketHandshake says whether r asks for a WebSocket, as kube's
// wsstream.IsWebSocketRequest, and is a GET, as RFC 6455 requires.
func webSocketHandshake(r *http.Request) bool {
	return r.Method == http.MethodGet && headerHasToken(r.Header, "Connection", "upgrade") &&
		strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

var errNoCredentials = errors.New("no credentials")

// user authenticates r: anonymous when no authenticator is configured, or
// when r has no credentials and Config.AnonymousAuth allows it (as kube's
// anonymous authenticator, last in its union), or for a health check.
// Attempts are counted as kube counts them.
func (s *Server) user(r *http.Request) (*authn.User, error) {
	if s.cfg.Authenticator == nil {
		return anonymous, nil
	}
	start := time.Now()
	u, ok, err := s.cfg.Authenticator.Authenticate(r)
	switch {
	case ok:
		s.metrics.Authenticated(metrics.AuthnSuccess, u.Name, time.Since(start))
		return u, nil
	case err == nil && s.cfg.AnonymousAuth:
		s.metrics.Authenticated(metrics.AuthnSuccess, anonymous.Name, time.Since(start))
		return anonymous, nil
	case err != nil:
		s.metrics.Authenticated(metrics.AuthnError, "", time.Since(start))
	default:
		s.metrics.Authenticated(metrics.AuthnFailure, "", time.Since(start))
		err = errNoCredentials
	}
	if openPaths[r.URL.Path] {
		return anonymous, nil
	}
	return nil, err
}

// readAhead reads the body of a request that may change something before
// limitInFlight lets it take a slot, so that a client trickling its body
// holds a connection but no slot (kube-apiserver reads it in the handler,
// its seat taken, for as long as it trickles). The read has a
// deadline, RequestBodyTimeout after the headers; the handler's readBody
// gets the bytes, or the error (413, 504, 429 when the bodies read ahead
// hold their budget) to answer in its turn. The body of a read is not
// read, its handler ignores it, but has the deadline too: net/http reads
// it after the handler (a watch's hijacked connection drops the deadline).
func (s *Server) readAhead(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		// A ResponseWriter that cannot set a deadline (none of ours) still
		// has its body read before the slot is taken.
		rc := http.NewResponseController(w)
		_ = rc.SetReadDeadline(time.Now().Add(s.cfg.RequestBodyTimeout))
		if r.Method == http.MethodGet || r.Method == http.MethodHead {
			next.ServeHTTP(w, r)
			return
		}
		budget, user := s.bodies, noteOf(r).user
		if privileged(user) {
			budget = nil
		}
		counted := &budgetedBody{ReadCloser: r.Body, budget: budget, user: user.Name, presized: s.presized(r)}
		r.Body = counted
		defer func() { budget.give(user.Name, counted.taken) }()
		b, err := s.readBody(r)
		if rec := noteOf(r).audit; rec != nil {
			rec.body = b
		}
		if err == nil {
			_ = rc.SetReadDeadline(time.Time{})
		} else {
			// Now, so that net/http does not read the rest after the
			// handler (a short rest it would, for the next request) and
			// closes the connection once the error is written.
			_ = rc.SetReadDeadline(time.Now())
		}
		ab := &aheadBody{b: b, err: err}
		ab.Reset(b)
		r.Body = ab
		next.ServeHTTP(w, r)
	})
}

// byteBudget bounds the bytes of the bodies readAhead holds, from the
// first until their request ends: the bytes their clients sent, or the
// buffer made for an announced length if larger (io.ReadAll's growth may
// hold up to twice the bytes sent). One user may hold a share of it, so
// that a client stalling bodies of the largest size cannot take it all
// and lock the others' writes out. A nil one does not bound.
type byteBudget struct {
	max, share int64
	mu         sync.Mutex
	// guarded by mu:
	used   int64
	byUser map[string]int64
}

// bodyShares is how many users' bodies the read-ahead budget holds at
// least, each up to its share.
const bodyShares = 4

// newByteBudget is a budget of max bytes; none if max is not positive.
func newByteBudget(max int64) *byteBudget {
	if max <= 0 {
		return nil
	}
	return &byteBudget{max: max, share: max / bodyShares, byUser: map[string]int64{}}
}

// take takes n bytes for user's body, if both the budget and user's share
// hold them.
func (b *byteBudget) take(user string, n int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max || b.byUser[user]+n > b.share {
		return false
	}
	b.used += n
	b.byUser[user] += n
	return true
}

// give gives back n bytes user's body took.
func (b *byteBudget) give(user string, n int64) {
	if b == nil || n == 0 {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used -= n
	if b.byUser[user] -= n; b.byUser[user] == 0 {
		delete(b.byUser, user)
	}
}

// errBodyBudget fails a body read beyond the budget of the bodies read ahead.
var errBodyBudget = errors.New("the bodies being read hold their budget")

// budgetedBody takes the bytes read from its budget, and the buffer made
// for them (presized) before the first read waits; a read it cannot take
// fails.
type budgetedBody struct {
	io.ReadCloser
	budget      *byteBudget
	user        string // whose share the bytes are taken from
	presized    int64
	read, taken int64
}

func (b *budgetedBody) Read(p []byte) (int, error) {
	if err := b.takeUpTo(b.presized); err != nil {
		return 0, err
	}
	n, err := b.ReadCloser.Read(p)
	b.read += int64(n)
	if terr := b.takeUpTo(b.read); terr != nil {
		return 0, terr
	}
	return n, err
}

// takeUpTo takes from the budget what n bytes need beyond those taken.
func (b *budgetedBody) takeUpTo(n int64) error {
	if n <= b.taken {
		return nil
	}
	if !b.budget.take(b.user, n-b.taken) {
		return errBodyBudget
	}
	b.taken = n
	return nil
}

// semaphore bounds concurrent requests; a nil one does not.
type semaphore chan struct{}

func newSemaphore(n int) semaphore {
	if n < 0 {
		return nil
	}
	return make(semaphore, n)
}

func (sem semaphore) tryAcquire() bool {
	if sem == nil {
		return true
	}
	select {
	case sem <- struct{}{}:
		return true
	default:
		return false
	}
}

func (sem semaphore) release() {
	if sem != nil {
		<-sem
	}
}

// limitInFlight answers 429 with Retry-After: 1 to a request beyond its
// kind's limit of concurrent requests, as kube-apiserver's max-in-flight
// filter: reads and writes are limited separately; watches (long-running),
// health checks and system:masters are not limited.
func (s *Server) limitInFlight(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := noteOf(r)
		if n.info.Verb == "watch" || openPaths[r.URL.Path] || privileged(n.user) {
			next.ServeHTTP(w, r)
			return
		}
		mutating := r.Method != http.MethodGet && r.Method != http.MethodHead
		sem := s.readOnly
		if mutating {
			sem = s.mutating
		}
		if !sem.tryAcquire() {
			writeError(w, apierror.TooManyRequests("Too many requests, please try again later.", 1))
			return
		}
		defer sem.release()
		gauge := s.metrics.InFlight(mutating)
		gauge.Inc()
		defer gauge.Dec()
		next.ServeHTTP(w, r)
	})
}

// privileged says whether u is exempt from the in-flight limits, as in
// kube: a member of system:masters.
func privileged(u *authn.User) bool {
	for _, g := range u.Groups {
		if g == authn.SystemPrivilegedGroup {
			return true
		}
	}
	return false
}

// metricLabels labels a request as kube-apiserver's metrics do, from
// bounded sets: a resource the catalogue does not serve is left unnamed.
func (s *Server) metricLabels(r *http.Request, n *note) metrics.Request {
	info := n.info
	if _, ok := s.catalog.Get(info.Group, info.Version, info.Resource); !n.isAPI || !info.IsResource || !ok {
		return metrics.Request{Verb: metricVerb(r, "", "")}
	}
	l := metrics.Request{DryRun: dryRun(r), Group: info.Group, Version: info.Version, Resource: info.Resource, Scope: scope(info)}
	if namespaceSubresources[info.Subresource] {
		l.Subresource = info.Subresource
	}
	l.Verb = metricVerb(r, info.Verb, l.Scope)
	return l
}

// scope is kube's metric scope: resource, namespace, cluster.
func scope(info requestInfo) string {
	switch {
	case info.Name != "" || info.Verb == "create":
		return "resource"
	case info.Namespace != "":
		return "namespace"
	}
	return "cluster"
}

// metricVerb is kube's metric verb: WATCH, GET or LIST for reads, APPLY
// for server-side apply, else the method (other for unknown methods).
func metricVerb(r *http.Request, verb, scope string) string {
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case verb == "watch":
		return "WATCH"
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		if scope == "namespace" || scope == "cluster" {
			return "LIST"
		}
		return "GET"
	case r.Method == http.MethodPatch && ct == mediaApplyPatchYAML:
		return "APPLY"
	case r.Method == http.MethodPost || r.Method == http.MethodPut || r.Method == http.MethodPatch || r.Method == http.MethodDelete:
		return r.Method
	}
	return "other"
}

// dryRun is kube's dry_run label: empty, All, or invalid.
func dryRun(r *http.Request) string {
	switch v := r.URL.Query()["dryRun"]; {
	case len(v) == 0:
		return ""
	case len(v) == 1 && v[0] == "All":
		return "All"
	}
	return "invalid"
}

// recorder notes a response's status code and size. It passes Flush
// through for watches, and WebSocket upgrades find the Hijacker by Unwrap.
type recorder struct {
	http.ResponseWriter
	code  int
	bytes int64
}

func (rec *recorder) WriteHeader(code int) {
	if rec.code == 0 && (code >= 200 || code == http.StatusSwitchingProtocols) {
		rec.code = code
	}
	rec.ResponseWriter.WriteHeader(code)
}

func (rec *recorder) Write(b []byte) (int, error) {
	if rec.code == 0 {
		rec.code = http.StatusOK
	}
	n, err := rec.ResponseWriter.Write(b)
	rec.bytes += int64(n)
	return n, err
}

// status is the response's code: 200 if the handler wrote nothing.
func (rec *recorder) status() int {
	if rec.code == 0 {
		return http.StatusOK
	}
	return rec.code
}

func (rec *recorder) Flush() { _ = http.NewResponseController(rec.ResponseWriter).Flush() }

func (rec *recorder) Unwrap() http.ResponseWriter { return rec.ResponseWriter }
