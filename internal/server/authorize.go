package server

import (
	"net/http"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authz"
)

// authorize answers kube's 403 to a request its user may not make. A watch
// is authorized once, when it starts, as in kube. Health checks are open,
// so that probes need neither credentials nor a role (kube grants them to
// everyone through system:public-info-viewer).
func (s *Server) authorize(next http.Handler) http.Handler {
	if s.cfg.Authorizer == nil {
		return next
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if openPaths[r.URL.Path] {
			next.ServeHTTP(w, r)
			return
		}
		a := attributesOf(r, noteOf(r))
		start := time.Now()
		d, reason, err := s.cfg.Authorizer.Authorize(r.Context(), a)
		s.metrics.Authorized(authzResult(d, err), time.Since(start))
		auditAuthorized(r, a, d, reason, err)
		if d == authz.Allow {
			next.ServeHTTP(w, r)
			return
		}
		if err != nil {
			s.log.Warn("authorization failed", "user", a.User.Name, "path", r.URL.Path, "err", err)
		}
		writeError(w, forbidden(a, reason))
	})
}

// authzResult is kube's label of an authorization attempt.
func authzResult(d authz.Decision, err error) string {
	switch {
	case d == authz.Allow:
		return metrics.AuthzAllowed
	case err != nil:
		return metrics.AuthzError
	case d == authz.Deny:
		return metrics.AuthzDenied
	}
	return metrics.AuthzNoOpinion
}

// attributesOf is what r asks to do, as kube's RequestInfoFactory and
// WithAuthorization read it.
func attributesOf(r *http.Request, n *note) authz.Attributes {
	info := n.info
	a := authz.Attributes{User: n.user, Path: r.URL.Path}
	if !n.isAPI || !info.IsResource {
		a.Verb = strings.ToLower(r.Method)
		return a
	}
	a.ResourceRequest = true
	a.Verb, a.APIGroup, a.APIVersion = info.Verb, info.Group, info.Version
	a.Namespace, a.Resource, a.Subresource, a.Name = info.Namespace, info.Resource, info.Subresource, info.Name
	if a.Resource == "namespaces" && a.APIGroup == "" {
		// A namespace is inside itself: a RoleBinding in it may grant
		// reading it.
		a.Namespace = a.Name
	}
	if a.Name == "" && (a.Verb == "list" || a.Verb == "watch") {
		a.Name = selectedName(r)
	}
	return a
}

// selectedName is the name a list's or watch's field selector requires,
// which kube's RequestInfoFactory takes as the request's name, so that a
// role limited to resourceNames may list and watch its objects (an
// informer of one object does).
func selectedName(r *http.Request) string {
	if !strings.Contains(r.URL.RawQuery, "fieldSelector") {
		return ""
	}
	fs, err := selector.ParseFields(r.URL.Query().Get("fieldSelector"))
	if err != nil {
		return ""
	}
	name, ok := fs.RequiresExactMatch("metadata.name")
	if !ok || api.PathSegmentNameErrors(name) != nil {
		return ""
	}
	return name
}

// forbidden is kube's 403 Status for a request a was not allowed.
func forbidden(a authz.Attributes, reason string) error {
	why := authz.ForbiddenMessage(a)
	if reason != "" {
		why += ": " + reason
	}
	return apierror.ForbiddenTo(apierror.Target{Group: a.APIGroup, Resource: a.Resource, Name: a.Name}, why)
}
