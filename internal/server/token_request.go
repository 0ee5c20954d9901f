package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/server/serviceaccount"
)

// tokenSubresource is serviceaccounts/token: POST an
// authentication.k8s.io/v1 TokenRequest, get it back with a token.
var tokenSubresource = resource.Subresource{
	Name: "token", Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Verbs: []string{"create"},
}

// addSubresource gives the core resource plural of builtins sub.
func addSubresource(builtins []*resource.Resource, plural string, sub resource.Subresource) {
	for _, r := range builtins {
		if r.Group == "" && r.Plural == plural {
			r.Subresources = append(r.Subresources, sub)
		}
	}
}

// Lifetimes of the tokens requested, as kube's TokenRequest defaulting and
// validation.
const (
	defaultTokenSeconds = 60 * 60
	minTokenSeconds     = 10 * 60
	maxTokenSeconds     = 1 << 32
)

// tokenRequest is authentication.k8s.io/v1 TokenRequest.
type tokenRequest struct {
	APIVersion string             `json:"apiVersion"`
	Kind       string             `json:"kind"`
	Metadata   tokenRequestMeta   `json:"metadata"`
	Spec       tokenRequestSpec   `json:"spec"`
	Status     tokenRequestStatus `json:"status"`
}

type tokenRequestMeta struct {
	Name              string  `json:"name,omitempty"`
	Namespace         string  `json:"namespace,omitempty"`
	CreationTimestamp *string `json:"creationTimestamp"` // null, as kube's
}

type tokenRequestSpec struct {
	Audiences         []string        `json:"audiences"`
	ExpirationSeconds *int64          `json:"expirationSeconds"`
	BoundObjectRef    *boundObjectRef `json:"boundObjectRef"`
}

type boundObjectRef struct {
	Kind       string `json:"kind,omitempty"`
	APIVersion string `json:"apiVersion,omitempty"`
	Name       string `json:"name,omitempty"`
	UID        string `json:"uid,omitempty"`
}

type tokenRequestStatus struct {
	Token               string `json:"token"`
	ExpirationTimestamp string `json:"expirationTimestamp"`
}

// createToken answers a TokenRequest for the service account of the path,
// as kube's TokenREST: the account must exist, the lifetime defaults to an
// hour within [10 minutes, 2^32 seconds] and is shortened to the server's
// maximum with a warning, the audiences default to the API's, and a token
// bound to a Secret dies with it.
func (q *request) createToken() {
	tokens := q.s.cfg.ServiceAccountTokens
	tr, err := q.readTokenRequest()
	if err != nil {
		q.fail(err)
		return
	}
	ctx := q.r.Context()
	if err := q.s.registry.CheckNamespace(ctx, q.res, q.info.Namespace, q.info.Name); err != nil {
		q.fail(err) // kube's NamespaceLifecycle admission, before the account is read
		return
	}
	saKV, err := q.s.registry.GetStored(ctx, q.res, q.info.Namespace, q.info.Name)
	if err != nil {
		q.fail(err)
		return
	}
	sa, err := registry.Decode(q.r.Context(), q.res, saKV)
	if err != nil {
		q.fail(err)
		return
	}
	var secret *serviceaccount.Ref
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		if secret, err = q.boundSecret(ref); err != nil {
			q.fail(err)
			return
		}
	}
	if max := int64(tokens.MaxExpiration() / time.Second); max > 0 && *tr.Spec.ExpirationSeconds > max {
		q.warnings().Add(fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *tr.Spec.ExpirationSeconds, max))
		*tr.Spec.ExpirationSeconds = max
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = tokens.Audiences()
	}
	now := time.Now()
	expiry := now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second)
	uid := sa.UID()
	token, err := tokens.Issue(serviceaccount.Claims{
		Namespace: q.info.Namespace, ServiceAccount: serviceaccount.Ref{Name: q.info.Name, UID: uid}, Secret: secret,
		Audiences: tr.Spec.Audiences, ID: registry.NewUID(), IssuedAt: now, Expiry: expiry,
	})
	if err != nil {
		q.fail(apierror.Internal(err))
		return
	}
	tr.APIVersion, tr.Kind = "authentication.k8s.io/v1", "TokenRequest"
	tr.Metadata = tokenRequestMeta{Name: q.info.Name, Namespace: q.info.Namespace}
	tr.Status = tokenRequestStatus{Token: token, ExpirationTimestamp: expiry.UTC().Format(time.RFC3339)}
	writeAs(q.w, http.StatusCreated, q.out, tr)
}

// checkKind refuses a request body of another apiVersion or kind than
// a subresource's, when it names them.
func checkKind(obj api.Object, apiVersion, kind string) error {
	if v := obj.APIVersion(); v != "" && v != apiVersion {
		return apierror.BadRequest(fmt.Sprintf("the API version in the data (%s) does not match the expected API version (%s)", v, apiVersion))
	}
	if k := obj.Kind(); k != "" && k != kind {
		return apierror.BadRequest(fmt.Sprintf("the kind in the data (%s) does not match the expected kind (%s)", k, kind))
	}
	return nil
}

// readTokenRequest reads and validates the request's TokenRequest,
// defaulting its lifetime.
func (q *request) readTokenRequest() (*tokenRequest, error) {
	obj, err := q.s.readObject(q.r, "TokenRequest")
	if err != nil {
		return nil, err
	}
	if err := checkKind(obj, "authentication.k8s.io/v1", "TokenRequest"); err != nil {
		return nil, err
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	var tr tokenRequest
	if err := json.Unmarshal(b, &tr); err != nil {
		return nil, apierror.BadRequest("the body is not a TokenRequest: " + err.Error())
	}
	if tr.Spec.ExpirationSeconds == nil {
		tr.Spec.ExpirationSeconds = new(int64(defaultTokenSeconds))
	}
	if causes := tr.validate(q.info); len(causes) > 0 {
		return nil, apierror.Invalid(tokenSubresource.Group, tokenSubresource.Kind, q.info.Name, causes)
	}
	return &tr, nil
}

// validate is kube's ValidateTokenRequest, and the match of the object's
// name and namespace with the path's.
func (tr *tokenRequest) validate(info requestInfo) []api.StatusCause {
	var causes []api.StatusCause
	invalid := func(field string, value any, msg string) {
		causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, field, fmt.Sprintf("Invalid value: %s: %s", quoteValue(value), msg)))
	}
	if n := tr.Metadata.Name; n != "" && n != info.Name {
		invalid("metadata.name", n, "must match the service account name if specified")
	}
	if ns := tr.Metadata.Namespace; ns != "" && ns != info.Namespace {
		invalid("metadata.namespace", ns, "must match the service account namespace if specified")
	}
	switch s := *tr.Spec.ExpirationSeconds; {
	case s < minTokenSeconds:
		invalid("spec.expirationSeconds", s, "may not specify a duration less than 10 minutes")
	case s > maxTokenSeconds:
		invalid("spec.expirationSeconds", s, "may not specify a duration larger than 2^32 seconds")
	}
	return causes
}

// quoteValue prints a field's value as kube's field.Invalid does: strings
// quoted, numbers bare.
func quoteValue(v any) string {
	if s, ok := v.(string); ok {
		return apierror.Quote(s)
	}
	return fmt.Sprint(v)
}

// boundSecret resolves a token's boundObjectRef as kube: a Secret of the
// namespace, whose UID must be ref's if ref names one; a Pod or Node is
// not found (this server serves neither); any other kind cannot be bound.
func (q *request) boundSecret(ref *boundObjectRef) (*serviceaccount.Ref, error) {
	group, version, _ := strings.Cut(ref.APIVersion, "/")
	if version == "" {
		group, version = "", group
	}
	switch {
	case group == "" && ref.Kind == "Secret":
	case group == "" && (ref.Kind == "Pod" || ref.Kind == "Node"):
		return nil, apierror.NotFound(apierror.Target{Resource: strings.ToLower(ref.Kind) + "s", Name: ref.Name})
	default:
		return nil, apierror.BadRequest(fmt.Sprintf("cannot bind token to object of type %s/%s, Kind=%s", group, version, ref.Kind))
	}
	secrets, _ := q.s.catalog.Get("", "v1", "secrets")
	kv, err := q.s.registry.GetStored(q.r.Context(), secrets, q.info.Namespace, ref.Name)
	if err != nil {
		return nil, err
	}
	obj, err := registry.Decode(q.r.Context(), secrets, kv)
	if err != nil {
		return nil, err
	}
	uid := obj.UID()
	if ref.UID != "" && ref.UID != uid {
		return nil, apierror.Conflict(apierror.Target{Resource: "Secret", Name: ref.Name}, fmt.Sprintf(
			"the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
	}
	return &serviceaccount.Ref{Name: ref.Name, UID: uid}, nil
}

// routeOIDC serves the OIDC discovery documents of the service account
// issuer, as kube-apiserver does, when its issuer is an https URL.
func (s *Server) routeOIDC() {
	tokens := s.cfg.ServiceAccountTokens
	if tokens == nil || !tokens.Discoverable() {
		return
	}
	jwks := tokens.JWKS()
	s.mux.HandleFunc(serviceaccount.OpenIDConfigurationPath, func(w http.ResponseWriter, r *http.Request) {
		// The key set is on this server, at the address the client reached
		// (unless --service-account-jwks-uri says where): a shared cache
		// must keep the document apart per Host, so that a request with a
		// forged Host cannot poison the others' copy.
		scheme := "https"
		if r.TLS == nil {
			scheme = "http"
		}
		w.Header().Set("Vary", "Host")
		writeDiscoveryDocument(w, r, mediaJSON, tokens.OpenIDConfiguration(scheme+"://"+r.Host+serviceaccount.JWKSPath))
	})
	s.mux.HandleFunc(serviceaccount.JWKSPath, func(w http.ResponseWriter, r *http.Request) {
		writeDiscoveryDocument(w, r, serviceaccount.MediaJWKS, jwks)
	})
}

func writeDiscoveryDocument(w http.ResponseWriter, r *http.Request, contentType string, b []byte) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		writeError(w, apierror.MethodNotAllowed(r.Method, r.URL.Path))
		return
	}
	w.Header().Set("Content-Type", contentType)
	w.Header().Set("Cache-Control", serviceaccount.CacheControl)
	_, _ = w.Write(b)
}
