package server

import (
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// The headers a user acts as another with, as kube's (k8s.io/api
// authentication/v1).
const (
	impersonateUser        = "Impersonate-User"
	impersonateGroup       = "Impersonate-Group"
	impersonateUID         = "Impersonate-Uid"
	impersonateExtraPrefix = "Impersonate-Extra-"
)

// maxImpersonations bounds the Authorizer calls one request's headers may
// cause (a user, and each group, extra value and uid): a client with
// groups of hundreds fits, one filling its headers with a million does not.
const maxImpersonations = 1000

// authenticationAPIGroup is where userextras and uids are impersonated.
const authenticationAPIGroup = "authentication.k8s.io"

// impersonate lets a request act as the user its Impersonate-* headers
// name, as kube's WithImpersonation: each thing impersonated is authorized
// for the authenticated user with verb impersonate, and the impersonated
// user is then who authorization, the handlers and the access log see. A
// request without such headers costs a look at its header names.
func (s *Server) impersonate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var asked []authz.Attributes
		var err error
		if hasImpersonation(r.Header) {
			asked, err = impersonations(r.Header)
		}
		if err != nil {
			writeError(w, err)
			return
		}
		if len(asked) == 0 {
			next.ServeHTTP(w, r)
			return
		}
		n := noteOf(r)
		as, err := s.actAs(r, n.user, asked)
		if err != nil {
			writeError(w, err)
			return
		}
		n.user = as
		// Not passed on, as kube strips them.
		for k := range r.Header {
			if strings.HasPrefix(k, "Impersonate-") {
				delete(r.Header, k)
			}
		}
		next.ServeHTTP(w, r.WithContext(authn.WithUser(r.Context(), as)))
	})
}

func hasImpersonation(h http.Header) bool {
	for k := range h {
		if strings.HasPrefix(k, "Impersonate-") {
			return true
		}
	}
	return false
}

// actAs authorizes, for requester, what r's headers impersonate (asked,
// in kube's order: the user, each group, each extra value, the uid), and
// returns the user they make.
func (s *Server) actAs(r *http.Request, requester *authn.User, asked []authz.Attributes) (*authn.User, error) {
	as := &authn.User{}
	_, groupsGiven := r.Header[impersonateGroup]
	for _, a := range asked {
		switch a.Resource {
		case "users":
			as.Name = a.Name
		case "serviceaccounts":
			as.Name = authn.ServiceAccountUser(a.Namespace, a.Name)
			if !groupsGiven {
				as.Groups = authn.ServiceAccountGroups(a.Namespace)
			}
		case "groups":
			as.Groups = append(as.Groups, a.Name)
		case "userextras":
			if as.Extra == nil {
				as.Extra = map[string][]string{}
			}
			as.Extra[a.Subresource] = append(as.Extra[a.Subresource], a.Name)
		case "uids":
			as.UID = a.Name
		}
		a.User, a.Verb, a.ResourceRequest = requester, "impersonate", true
		if d, reason, err := s.authorizer().Authorize(r.Context(), a); d != authz.Allow {
			if err != nil {
				s.log.Warn("authorization failed", "user", requester.Name, "impersonate", a.Resource, "err", err)
			}
			return nil, forbidden(a, reason)
		}
	}
	// Every user but the anonymous one is authenticated, unless the groups
	// asked say otherwise; the anonymous one never is.
	switch {
	case as.Name == anonymous.Name && !slices.Contains(as.Groups, authn.AllUnauthenticated):
		as.Groups = append(as.Groups, authn.AllUnauthenticated)
	case as.Name != anonymous.Name && !slices.Contains(as.Groups, authn.AllAuthenticated) && !slices.Contains(as.Groups, authn.AllUnauthenticated):
		as.Groups = append(as.Groups, authn.AllAuthenticated)
	}
	return as, nil
}

// impersonations are the things h's headers impersonate, each as the
// attributes of its authorization but for who asks: a user or service
// account (Impersonate-User), groups (users or serviceaccounts and groups
// in the core group), extra values (userextras/<key>) and a uid (uids) in
// authentication.k8s.io.
func impersonations(h http.Header) ([]authz.Attributes, error) {
	var asked []authz.Attributes
	user := h.Get(impersonateUser)
	if user != "" {
		if ns, name, ok := splitServiceAccount(user); ok {
			asked = append(asked, authz.Attributes{Resource: "serviceaccounts", Namespace: ns, Name: name})
		} else {
			asked = append(asked, authz.Attributes{Resource: "users", Name: user})
		}
	}
	for _, g := range h[impersonateGroup] {
		asked = append(asked, authz.Attributes{Resource: "groups", Name: g})
	}
	for _, k := range slices.Sorted(maps.Keys(h)) {
		encoded, ok := strings.CutPrefix(k, impersonateExtraPrefix)
		if !ok {
			continue
		}
		key := strings.ToLower(encoded)
		if unescaped, err := url.PathUnescape(key); err == nil {
			key = unescaped
		}
		for _, v := range h[k] {
			asked = append(asked, authz.Attributes{APIGroup: authenticationAPIGroup, Resource: "userextras", Subresource: key, Name: v})
		}
	}
	if uid := h.Get(impersonateUID); uid != "" {
		asked = append(asked, authz.Attributes{APIGroup: authenticationAPIGroup, Resource: "uids", Name: uid})
	}
	switch {
	case len(asked) > maxImpersonations:
		return nil, apierror.BadRequest(fmt.Sprintf("at most %d users, groups, extra values and uids may be impersonated at once", maxImpersonations))
	case len(asked) > 0 && user == "":
		return nil, apierror.Internal(fmt.Errorf("requested %s without impersonating a user", describe(asked)))
	}
	return asked, nil
}

// splitServiceAccount reads a service account's user name,
// system:serviceaccount:<namespace>:<name> with valid names, as kube's
// SplitUsername.
func splitServiceAccount(user string) (ns, name string, ok bool) {
	ns, name, ok = authn.SplitServiceAccountUser(user)
	return ns, name, ok && registry.IsNamespaceName(ns) && registry.IsObjectName(name)
}

// describe writes what was asked as kube's message does, each an
// ObjectReference printed by %v.
func describe(asked []authz.Attributes) string {
	kinds := map[string]string{"groups": "Group", "userextras": "UserExtra", "uids": "UID"}
	parts := make([]string, len(asked))
	for i, a := range asked {
		apiVersion := ""
		if a.APIGroup != "" {
			apiVersion = a.APIGroup + "/v1"
		}
		parts[i] = fmt.Sprintf("{%s %s %s  %s  %s}", kinds[a.Resource], a.Namespace, a.Name, apiVersion, a.Subresource)
	}
	return "[" + strings.Join(parts, " ") + "]"
}
