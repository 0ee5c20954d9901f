package server

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"mime"
	"net"
	"net/http"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// Bounds of what an event repeats of a request, so that its metadata
// stays far below MaxEventBytes whatever the client sends.
const (
	// maxUserAgent is kube's.
	maxUserAgent = 1024
	// maxRequestURI: kube logs the whole URI, up to net/http's 1 MiB of
	// headers, which would take an event past its bound and drop it.
	maxRequestURI = 16 << 10
	// maxAuditID is the longest Audit-ID header taken as it is (kube
	// logs its first 64 characters in its other logs).
	maxAuditID = 64
	// maxForwardedIPs are the X-Forwarded-For addresses kept.
	maxForwardedIPs = 16
	// truncatedSuffix ends a truncated string, as kube's user agent.
	truncatedSuffix = "...TRUNCATED"
)

// auditRecord is a request's audit event as it is built, written at each
// stage the policy keeps. The request's goroutine owns it until the
// response is complete; a detached watch's end completes it.
type auditRecord struct {
	log  *audit.Log
	cfg  audit.RequestConfig
	ev   audit.Event
	user *authn.User // who authenticated; another one authorized is impersonated
	// redact: the request's bodies carry secrets (audit.Redacted).
	redact bool
	// body is the request's body, read ahead (readAhead), of bodyType.
	body     []byte
	bodyType string
	// code is the response's, 0 until its head is written.
	code int
	// captured: the response's bytes, kept while they fit in an event
	// (overflow once they do not).
	capture, overflow bool
	captured          []byte
}

// auditRequests writes kube-apiserver's audit events of each request the
// policy selects. It sits where kube's WithAudit does: after
// authentication, before impersonation and authorization, which add the
// impersonated user and the decision to the event (auditAuthorized).
func (s *Server) auditRequests(next http.Handler) http.Handler {
	if s.cfg.AuditLog == nil || s.cfg.AuditPolicy == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := s.beginAudit(w, r)
		if rec == nil {
			next.ServeHTTP(w, r)
			return
		}
		if s.cfg.Authorizer == nil { // no authorize filter to say so: everything is allowed
			rec.annotate(audit.DecisionAnnotation, "allow", audit.ReasonAnnotation, "")
		}
		n := noteOf(r)
		n.audit = rec
		rec.write(audit.StageRequestReceived, true)
		defer func() {
			if p := recover(); p != nil {
				rec.ev.ResponseStatus = &api.Status{
					Status: api.StatusFailure, Reason: api.StatusReasonInternalError, Code: http.StatusInternalServerError,
					Message: fmt.Sprintf("APIServer panic'd: %v", p),
				}
				rec.write(audit.StagePanic, true)
				panic(p)
			}
			if !n.detached { // else the stream's end completes it
				rec.complete(true)
			}
		}()
		next.ServeHTTP(&auditWriter{ResponseWriter: w, rec: rec}, r)
	})
}

// auditID is the client's Audit-ID, if it sent one, bounded; else a new one.
func auditID(r *http.Request) string {
	id := r.Header.Get(audit.HeaderAuditID)
	if id == "" {
		return registry.NewUID()
	}
	return truncate(id, maxAuditID, "")
}

// truncate bounds s to n bytes, at a rune's start, ending it with suffix.
func truncate(s string, n int, suffix string) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && n < len(s) && s[n]&0xc0 == 0x80 {
		n--
	}
	return s[:n] + suffix
}

// beginAudit answers r's Audit-ID and begins its event, as the policy
// says of r's user (nil before authentication) and what r asks: nil if it
// is not logged.
func (s *Server) beginAudit(w http.ResponseWriter, r *http.Request) *auditRecord {
	id := auditID(r)
	w.Header().Set(audit.HeaderAuditID, id)
	n := noteOf(r)
	a := attributesOf(r, n)
	cfg := s.cfg.AuditPolicy.Evaluate(a)
	if cfg.Level == audit.LevelNone {
		return nil
	}
	rec := &auditRecord{log: s.cfg.AuditLog, cfg: cfg, user: a.User}
	rec.bodyType, _, _ = mime.ParseMediaType(r.Header.Get("Content-Type"))
	rec.ev = audit.Event{
		Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: cfg.Level, AuditID: id,
		RequestURI: truncate(r.URL.RequestURI(), maxRequestURI, truncatedSuffix), Verb: a.Verb,
		User: auditUser(a.User), SourceIPs: sourceIPs(r), UserAgent: truncate(r.UserAgent(), maxUserAgent, truncatedSuffix),
		RequestReceivedTimestamp: audit.MicroTime(n.start),
	}
	if a.ResourceRequest {
		rec.ev.ObjectRef = &audit.ObjectReference{
			Resource: a.Resource, Namespace: a.Namespace, Name: a.Name,
			APIGroup: a.APIGroup, APIVersion: a.APIVersion, Subresource: a.Subresource,
		}
		rec.redact = audit.Redacted(a.APIGroup, a.Resource, a.Subresource)
	}
	return rec
}

// auditUnauthenticated writes the one event kube's
// WithFailedAuthenticationAudit writes of a request answered 401: at
// ResponseStarted, no user, the kinds of credentials it tried.
func (s *Server) auditUnauthenticated(w http.ResponseWriter, r *http.Request) {
	if s.cfg.AuditLog == nil || s.cfg.AuditPolicy == nil {
		return
	}
	rec := s.beginAudit(w, r)
	if rec == nil {
		return
	}
	rec.ev.ResponseStatus = &api.Status{Code: http.StatusUnauthorized, Message: triedCredentials(r)}
	rec.write(audit.StageResponseStarted, true)
}

// triedCredentials is kube's message of a failed authentication, naming the
// kinds of credentials r carries.
func triedCredentials(r *http.Request) string {
	var kinds []string
	if _, _, ok := r.BasicAuth(); ok {
		kinds = append(kinds, "basic")
	}
	if scheme, _, ok := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " "); ok && strings.EqualFold(scheme, "bearer") {
		kinds = append(kinds, "bearer")
	}
	if strings.TrimSpace(r.URL.Query().Get("access_token")) != "" {
		kinds = append(kinds, "access_token")
	}
	if r.TLS != nil && len(r.TLS.PeerCertificates) > 0 {
		kinds = append(kinds, "x509")
	}
	if len(kinds) == 0 {
		return "Authentication failed, no credentials provided"
	}
	return "Authentication failed, attempted: " + strings.Join(kinds, ", ")
}

func auditUser(u *authn.User) audit.UserInfo {
	if u == nil {
		return audit.UserInfo{}
	}
	return audit.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// sourceIPs are kube's (utilnet.SourceIPs): the X-Forwarded-For addresses,
// X-Real-Ip unless among them, and the connection's peer unless it is the
// last of them.
func sourceIPs(r *http.Request) []string {
	var ips []net.IP
	if fwd := r.Header.Get("X-Forwarded-For"); fwd != "" {
		for part := range strings.SplitSeq(fwd, ",") {
			if ip := net.ParseIP(strings.TrimSpace(part)); ip != nil && len(ips) < maxForwardedIPs {
				ips = append(ips, ip)
			}
		}
	}
	contains := func(ip net.IP) bool {
		for _, v := range ips {
			if v.Equal(ip) {
				return true
			}
		}
		return false
	}
	if ip := net.ParseIP(r.Header.Get("X-Real-Ip")); ip != nil && !contains(ip) {
		ips = append(ips, ip)
	}
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	if ip := net.ParseIP(host); ip != nil && (len(ips) == 0 || !ip.Equal(ips[len(ips)-1])) {
		ips = append(ips, ip)
	}
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}

func (rec *auditRecord) annotate(kv ...string) {
	if rec.ev.Annotations == nil {
		rec.ev.Annotations = make(map[string]string, len(kv)/2)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		rec.ev.Annotations[kv[i]] = kv[i+1]
	}
}

// auditAuthorized notes the authorization's decision on r's audit event,
// with kube's annotations, and the user it authorized when it is not the
// one who authenticated (impersonation).
func auditAuthorized(r *http.Request, a authz.Attributes, d authz.Decision, reason string, err error) {
	rec := noteOf(r).audit
	if rec == nil {
		return
	}
	switch {
	case d == authz.Allow:
		rec.annotate(audit.DecisionAnnotation, "allow", audit.ReasonAnnotation, reason)
	case err != nil:
		rec.annotate(audit.ReasonAnnotation, "internal error")
	default:
		rec.annotate(audit.DecisionAnnotation, "forbid", audit.ReasonAnnotation, reason)
	}
	if a.User != nil && a.User != rec.user {
		u := auditUser(a.User)
		rec.ev.ImpersonatedUser = &u
	}
}

// auditRequestObject completes the objectRef of r's event from the object
// its body decoded to, as kube's LogRequestObject: the name and namespace
// a create gives in its body, the uid and resourceVersion sent.
func auditRequestObject(r *http.Request, obj api.Object) {
	n := noteOf(r)
	if n == nil || n.audit == nil || n.audit.ev.ObjectRef == nil {
		return
	}
	ref := n.audit.ev.ObjectRef
	ref.Name = cmp.Or(ref.Name, obj.Name())
	ref.Namespace = cmp.Or(ref.Namespace, obj.Namespace())
	ref.UID, ref.ResourceVersion = obj.UID(), obj.ResourceVersion()
}

// write writes the event at stage, unless the policy omits it; wait: until
// it is written, as kube's blocking log backend (audit.Log.Write bounds it).
func (rec *auditRecord) write(stage audit.Stage, wait bool) {
	if rec.cfg.Omits(stage) {
		return
	}
	rec.ev.Stage = stage
	rec.ev.StageTimestamp = audit.MicroTime(time.Now())
	if stage == audit.StageRequestReceived {
		rec.ev.StageTimestamp = rec.ev.RequestReceivedTimestamp
	}
	if wait {
		rec.log.Write(&rec.ev)
	} else {
		rec.log.Send(&rec.ev)
	}
}

// started notes the response's head; a watch's is a stage of its own.
func (rec *auditRecord) started(code int, contentType string) {
	if rec.code != 0 {
		return
	}
	rec.code = code
	rec.ev.ResponseStatus = &api.Status{Code: int32(code)}
	mt, _, _ := mime.ParseMediaType(contentType)
	// The body of a failure is its Status; of a success, the object
	// logged at RequestResponse, unless it is a watch's stream.
	watch := rec.ev.Verb == "watch"
	rec.capture = mt == mediaJSON && (code >= 300 || (!watch && rec.cfg.Level.AtLeast(audit.LevelRequestResponse) && !rec.redact))
	if watch {
		rec.write(audit.StageResponseStarted, true)
	}
}

// wrote keeps b, a part of the response, while the event can hold it.
func (rec *auditRecord) wrote(b []byte) {
	if !rec.capture {
		return
	}
	if int64(len(rec.captured)+len(b)) >= rec.log.MaxEventBytes() {
		rec.capture, rec.overflow, rec.captured = false, true, nil
		return
	}
	rec.captured = append(rec.captured, b...)
}

// complete writes the last event: ResponseComplete, with the request and
// response objects its level keeps.
func (rec *auditRecord) complete(wait bool) {
	if rec.code == 0 { // nothing written: kube's words for it
		rec.ev.ResponseStatus = &api.Status{Code: http.StatusOK, Status: api.StatusSuccess, Message: "Connection closed early"}
	} else if rec.code >= 300 && len(rec.captured) > 0 {
		var st api.Status
		if json.Unmarshal(rec.captured, &st) == nil && st.Kind == "Status" {
			rec.ev.ResponseStatus = &api.Status{Status: st.Status, Message: st.Message, Reason: st.Reason, Details: st.Details, Code: st.Code}
		}
	}
	if rec.cfg.Level.AtLeast(audit.LevelRequest) && !rec.redact {
		rec.ev.RequestObject = rec.object(rec.body, rec.bodyType)
	}
	if rec.cfg.Level.AtLeast(audit.LevelRequestResponse) && !rec.redact {
		if rec.overflow {
			rec.annotate(audit.TruncatedAnnotation, "true")
		} else if rec.code < 300 {
			rec.ev.ResponseObject = rec.object(rec.captured, mediaJSON)
		}
	}
	rec.write(audit.StageResponseComplete, wait)
}

// object is b, of media type mt, as the JSON an event holds: none if b is
// empty or not an object of a type the server reads; too large, none,
// and the event says it was truncated.
func (rec *auditRecord) object(b []byte, mt string) json.RawMessage {
	if len(b) == 0 {
		return nil
	}
	if int64(len(b)) >= rec.log.MaxEventBytes() {
		rec.annotate(audit.TruncatedAnnotation, "true")
		return nil
	}
	var obj api.Object
	var err error
	switch mt {
	case mediaProtobuf:
		obj, err = decodeProtobuf(b, "")
	case mediaYAML, mediaApplyPatchYAML:
		if b, err = yaml.YAMLToJSON(b); err == nil && rec.cfg.OmitManagedFields {
			obj, err = api.ParseObject(b)
		}
	default:
		if rec.cfg.OmitManagedFields {
			obj, err = api.ParseObject(b)
		} else if !json.Valid(b) {
			return nil
		}
	}
	if err != nil {
		return nil
	}
	if obj == nil {
		return bytes.Clone(b)
	}
	if rec.cfg.OmitManagedFields {
		withoutManagedFields(obj)
	}
	out, err := api.MarshalObject(obj)
	if err != nil {
		return nil
	}
	return out
}

// withoutManagedFields removes metadata.managedFields from obj, the items
// of a list and the objects of a Table's rows, as kube's
// copyWithoutManagedFields.
func withoutManagedFields(obj api.Object) {
	drop := func(v any) {
		if o, ok := v.(map[string]any); ok {
			if md, ok := o["metadata"].(map[string]any); ok {
				delete(md, "managedFields")
			}
		}
	}
	drop(map[string]any(obj))
	for _, key := range []string{"items", "rows"} {
		list, _ := obj[key].([]any)
		for _, item := range list {
			if row, ok := item.(map[string]any); ok && key == "rows" {
				item = row["object"]
			}
			drop(item)
		}
	}
}

// auditWriter notes the response's head and keeps its body for the
// event (auditRecord.started, wrote).
type auditWriter struct {
	http.ResponseWriter
	rec *auditRecord
}

func (w *auditWriter) WriteHeader(code int) {
	if code >= 200 || code == http.StatusSwitchingProtocols {
		w.rec.started(code, w.Header().Get("Content-Type"))
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *auditWriter) Write(b []byte) (int, error) {
	w.rec.started(http.StatusOK, w.Header().Get("Content-Type"))
	w.rec.wrote(b)
	return w.ResponseWriter.Write(b)
}

func (w *auditWriter) Flush() { _ = http.NewResponseController(w.ResponseWriter).Flush() }

func (w *auditWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
