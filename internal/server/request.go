package server

import (
	"cmp"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// requestInfo is what a request's path and method say it is, as
// kube-apiserver's RequestInfoFactory reads them.
type requestInfo struct {
	// IsResource is false for discovery and other non-resource paths.
	IsResource  bool
	Verb        string // get list watch create update patch delete deletecollection
	Prefix      string // "api" or "apis"
	Group       string
	Version     string
	Namespace   string
	Resource    string
	Name        string
	Subresource string
	// Parts are the path segments after the prefix, for non-resource paths.
	Parts []string
	// unclean: a segment is empty, ".", ".." or holds an escaped slash
	// (pathError).
	unclean bool
}

// namespaceSubresources are the subresources of a namespace itself, so that
// /api/v1/namespaces/x/status is not read as resource "status" in namespace x.
var namespaceSubresources = map[string]bool{"status": true, "finalize": true}

// parseRequest reads a request path; ok is false for a path that is not an
// API path at all.
func parseRequest(r *http.Request) (info requestInfo, ok bool) {
	parts, trailingSlash := pathSegments(r.URL)
	info.unclean = slices.ContainsFunc(parts, func(seg string) bool {
		return seg == "" || seg == "." || seg == ".." || strings.Contains(seg, "/")
	})
	if len(parts) == 0 || (parts[0] != "api" && parts[0] != "apis") {
		return info, false
	}
	info.Prefix, parts = parts[0], parts[1:]
	if info.Prefix == "api" {
		if len(parts) < 2 {
			info.Parts = parts
			return info, true
		}
		info.Version, parts = parts[0], parts[1:]
	} else {
		if len(parts) < 3 {
			info.Parts = parts
			return info, true
		}
		info.Group, info.Version, parts = parts[0], parts[1], parts[2:]
	}
	info.IsResource = true
	watchPath := parts[0] == "watch"
	if watchPath {
		parts = parts[1:]
	}
	// /namespaces/<ns>/<resource>... is inside a namespace; /namespaces/<name>
	// and /namespaces/<name>/status are the namespace object itself.
	if len(parts) > 2 && parts[0] == "namespaces" && !namespaceSubresources[parts[2]] {
		info.Namespace, parts = parts[1], parts[2:]
	}
	if len(parts) == 0 {
		return info, false
	}
	info.Resource = parts[0]
	if len(parts) > 1 {
		info.Name = parts[1]
	}
	if len(parts) > 2 {
		info.Subresource = parts[2]
	}
	info.Verb = verb(r, info.Name != "", watchPath)
	// A trailing slash is not an empty name: DELETE .../configmaps/ is no
	// deletecollection.
	return info, len(parts) <= 3 && !trailingSlash
}

// pathSegments returns the segments of u's path, each unescaped once, so
// that an escaped slash (%2F) stays inside its segment rather than making
// two; a trailing slash is left out and reported.
func pathSegments(u *url.URL) (segs []string, trailingSlash bool) {
	p := cmp.Or(u.RawPath, u.Path) // RawPath is set only when Path loses an escape
	p, _ = strings.CutPrefix(p, "/")
	if p == "" {
		return nil, false
	}
	p, trailingSlash = strings.CutSuffix(p, "/")
	segs = strings.Split(p, "/")
	if u.RawPath != "" {
		for i, seg := range segs {
			if d, err := url.PathUnescape(seg); err == nil {
				segs[i] = d
			}
		}
	}
	return segs, trailingSlash
}

// pathError refuses a path that net/http's ServeMux would clean and
// redirect, so that a client following the redirect would act on another
// object (DELETE configmaps/.. on the namespace): a name that is "." or
// ".." or holds "/" or "%" is kube-apiserver's 400 (NamespaceKeyFunc); an
// empty, "." or ".." segment, or one with an escaped slash, elsewhere is a
// path the server does not serve (404).
func pathError(info requestInfo) error {
	if msgs := api.PathSegmentNameErrors(info.Name); info.IsResource && msgs != nil {
		return apierror.BadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", info.Name, strings.Join(msgs, ";")))
	}
	if info.unclean {
		return notFoundPath()
	}
	return nil
}

// verb maps a method to kube's verb.
func verb(r *http.Request, named, watchPath bool) string {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		if watchPath || boolParam(r.URL.Query(), "watch") {
			return "watch"
		}
		if named {
			return "get"
		}
		return "list"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return ""
}
