package server

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// The access reviews (resource.Resource.CreateOnly), answered as kube's
// REST storage of authorization.k8s.io and authentication.k8s.io does
// (pkg/registry/authorization, pkg/registry/authentication): the object
// posted is a question, answered 201 with its status filled, never stored.

// review serves a request on a create-only resource.
func (q *request) review() {
	if q.info.Verb != "create" {
		q.fail(methodNotServed())
		return
	}
	obj, err := q.s.readObject(q.r, q.res.Kind)
	if err == nil {
		err = registry.CheckTypeAndScope(q.res, q.info.Namespace, obj)
	}
	if err == nil {
		err = registry.DecodeFields(q.r.Context(), q.res, obj)
	}
	if err == nil {
		obj, err = q.s.answer(q.r.Context(), q.res, obj)
	}
	if err != nil {
		q.fail(err)
		return
	}
	q.respond(http.StatusCreated, obj)
}

// methodNotServed is the 405 kube's router answers for a method a path
// does not serve.
func methodNotServed() error {
	e := apierror.MethodNotAllowed("", "")
	e.Status.Message = "the server does not allow this method on the requested resource"
	e.Status.Details = &api.StatusDetails{Causes: []api.StatusCause{{Type: "UnexpectedServerResponse", Message: "405: Method Not Allowed"}}}
	return e
}

// answer fills obj's status, the answer to the question it asks.
func (s *Server) answer(ctx context.Context, res *resource.Resource, obj api.Object) (api.Object, error) {
	user, _ := authn.UserFrom(ctx)
	if user == nil {
		return nil, apierror.BadRequest("no user present on request")
	}
	switch res.Kind {
	case "SelfSubjectAccessReview", "SubjectAccessReview", "LocalSubjectAccessReview":
		return s.accessReview(ctx, res, user, obj)
	case "SelfSubjectRulesReview":
		return s.rulesReview(ctx, res, user, obj)
	case "SelfSubjectReview":
		return selfSubjectReview(res, user), nil
	case "TokenReview":
		return s.tokenReview(ctx, res, obj)
	}
	return nil, apierror.Internal(fmt.Errorf("no answer for kind %s", res.Kind))
}

// accessSpec is a SubjectAccessReviewSpec (SelfSubjectAccessReview's has
// no subject).
type accessSpec struct {
	ResourceAttributes    *resourceAttributes    `json:"resourceAttributes"`
	NonResourceAttributes *nonResourceAttributes `json:"nonResourceAttributes"`
	User                  string                 `json:"user"`
	Groups                []string               `json:"groups"`
	Extra                 map[string][]string    `json:"extra"`
	UID                   string                 `json:"uid"`
}

// resourceAttributes are what a review asks of a resource. Its field and
// label selectors are checked as kube does and not evaluated: RBAC
// ignores them.
type resourceAttributes struct {
	Namespace     string              `json:"namespace,omitempty"`
	Verb          string              `json:"verb,omitempty"`
	Group         string              `json:"group,omitempty"`
	Version       string              `json:"version,omitempty"`
	Resource      string              `json:"resource,omitempty"`
	Subresource   string              `json:"subresource,omitempty"`
	Name          string              `json:"name,omitempty"`
	FieldSelector *selectorAttributes `json:"fieldSelector,omitempty"`
	LabelSelector *selectorAttributes `json:"labelSelector,omitempty"`
}

type selectorAttributes struct {
	RawSelector  string            `json:"rawSelector,omitempty"`
	Requirements []json.RawMessage `json:"requirements,omitempty"`
}

type nonResourceAttributes struct {
	Path string `json:"path,omitempty"`
	Verb string `json:"verb,omitempty"`
}

// accessReview answers a SelfSubjectAccessReview (for the request's user),
// SubjectAccessReview or LocalSubjectAccessReview (for the spec's) with
// the Authorizer's decision.
func (s *Server) accessReview(ctx context.Context, res *resource.Resource, user *authn.User, obj api.Object) (api.Object, error) {
	var spec accessSpec
	if err := typed(res, obj["spec"], &spec); err != nil {
		return nil, err
	}
	if causes := validateAccessReview(res.Kind, obj, &spec); len(causes) > 0 {
		return nil, apierror.Invalid(res.Group, res.Kind, "", causes)
	}
	if res.Kind != "SelfSubjectAccessReview" {
		user = &authn.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups, Extra: spec.Extra}
	}
	a := authz.Attributes{User: user}
	if ra := spec.ResourceAttributes; ra != nil {
		a.ResourceRequest = true
		a.Verb, a.Namespace, a.APIGroup, a.APIVersion = ra.Verb, ra.Namespace, ra.Group, ra.Version
		a.Resource, a.Subresource, a.Name = ra.Resource, ra.Subresource, ra.Name
		if a.APIVersion == "" {
			a.APIVersion = "*" // kube's matchAllVersionIfEmpty
		}
	} else {
		a.Verb, a.Path = spec.NonResourceAttributes.Verb, spec.NonResourceAttributes.Path
	}
	d, reason, err := s.authorizer().Authorize(ctx, a)
	status := map[string]any{"allowed": d == authz.Allow}
	if d == authz.Deny {
		status["denied"] = true
	}
	if reason != "" {
		status["reason"] = reason
	}
	if err != nil {
		status["evaluationError"] = err.Error()
	}
	obj["status"] = status
	return obj, nil
}

// validateAccessReview is kube's validation of the access reviews
// (pkg/apis/authorization/validation).
func validateAccessReview(kind string, obj api.Object, spec *accessSpec) []api.StatusCause {
	invalid := func(field string, value any, detail string) api.StatusCause {
		return apierror.Field(api.CauseTypeFieldValueInvalid, field, "Invalid value: "+invalidValue(value)+": "+detail)
	}
	var causes []api.StatusCause
	switch {
	case spec.ResourceAttributes != nil && spec.NonResourceAttributes != nil:
		causes = append(causes, invalid("spec.nonResourceAttributes", spec.NonResourceAttributes, "cannot be specified in combination with resourceAttributes"))
	case spec.ResourceAttributes == nil && spec.NonResourceAttributes == nil:
		causes = append(causes, invalid("spec.resourceAttributes", spec.NonResourceAttributes, "exactly one of nonResourceAttributes or resourceAttributes must be specified"))
	}
	if kind != "SelfSubjectAccessReview" && spec.User == "" && len(spec.Groups) == 0 {
		causes = append(causes, invalid("spec.user", spec.User, "at least one of user or group must be specified"))
	}
	if ra := spec.ResourceAttributes; ra != nil {
		for i, sel := range []*selectorAttributes{ra.FieldSelector, ra.LabelSelector} {
			path := "spec.resourceAttributes." + []string{"fieldSelector", "labelSelector"}[i]
			switch {
			case sel == nil:
			case sel.RawSelector != "" && len(sel.Requirements) > 0:
				causes = append(causes, invalid(path+".rawSelector", sel.RawSelector, "may not specified at the same time as requirements"))
			case sel.RawSelector == "" && len(sel.Requirements) == 0:
				causes = append(causes, apierror.Field(api.CauseTypeFieldValueRequired, path+".requirements", "Required value: when "+path+" is specified, requirements or rawSelector is required"))
			}
		}
	}
	md, _ := obj["metadata"].(map[string]any)
	switch {
	case kind != "LocalSubjectAccessReview":
		if !emptyMeta(md, "") {
			causes = append(causes, invalid("metadata", md, "must be empty"))
		}
		return causes
	case !emptyMeta(md, "namespace"):
		causes = append(causes, invalid("metadata", md, "must be empty except for namespace"))
	}
	ns, _ := md["namespace"].(string)
	if ra := spec.ResourceAttributes; ra != nil && ra.Namespace != ns {
		causes = append(causes, invalid("spec.resourceAttributes.namespace", ra.Namespace, "must match metadata.namespace"))
	}
	if spec.NonResourceAttributes != nil {
		causes = append(causes, invalid("spec.nonResourceAttributes", spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	return causes
}

// emptyMeta says whether metadata holds nothing but zero values, but in
// the key allowed, as kube compares it with an empty ObjectMeta;
// managedFields are ignored, as in kube.
func emptyMeta(md map[string]any, allowed string) bool {
	for k, v := range md {
		if k != "managedFields" && k != allowed && !zeroJSON(v) {
			return false
		}
	}
	return true
}

// zeroJSON says whether v is the JSON of a Go zero value.
func zeroJSON(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case float64:
		return v == 0
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// invalidValue writes a field's value in an Invalid cause as kube's
// field errors do: a string quoted, anything else as JSON (nothing as null).
func invalidValue(v any) string {
	if s, ok := v.(string); ok {
		return fmt.Sprintf("%q", s)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// typed decodes a part of obj into the Go value v, with kube's message
// for a body of the wrong shape.
func typed(res *resource.Resource, part any, v any) error {
	b, err := json.Marshal(part)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return apierror.BadRequest(fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", res.Kind, res.Version, res.Kind, err))
	}
	return nil
}

// rulesReview answers a SelfSubjectRulesReview with the rules the
// RuleResolver finds for the request's user in the spec's namespace.
func (s *Server) rulesReview(ctx context.Context, res *resource.Resource, user *authn.User, obj api.Object) (api.Object, error) {
	var spec struct {
		Namespace string `json:"namespace"`
	}
	if err := typed(res, obj["spec"], &spec); err != nil {
		return nil, err
	}
	if spec.Namespace == "" {
		return nil, apierror.BadRequest("no namespace on request")
	}
	status := map[string]any{"resourceRules": []any{}, "nonResourceRules": []any{}, "incomplete": false}
	r := s.ruleResolver()
	if r == nil {
		// As kube's authorizers that cannot list rules (webhook).
		status["incomplete"] = true
		return reviewAnswer(res, status), nil
	}
	rules, err := r.RulesFor(ctx, user, spec.Namespace)
	if err != nil {
		status["evaluationError"] = err.Error()
	}
	var resourceRules, nonResourceRules []any
	for _, rule := range rules {
		if len(rule.Resources) > 0 {
			resourceRules = append(resourceRules, omitEmpty(map[string]any{
				"verbs": jsonStrings(rule.Verbs), "apiGroups": rule.APIGroups, "resources": rule.Resources, "resourceNames": rule.ResourceNames,
			}))
		}
		if len(rule.NonResourceURLs) > 0 {
			nonResourceRules = append(nonResourceRules, omitEmpty(map[string]any{"verbs": jsonStrings(rule.Verbs), "nonResourceURLs": rule.NonResourceURLs}))
		}
	}
	if resourceRules != nil {
		status["resourceRules"] = resourceRules
	}
	if nonResourceRules != nil {
		status["nonResourceRules"] = nonResourceRules
	}
	return reviewAnswer(res, status), nil
}

// jsonStrings is a JSON array of ss: null when nil, as kube writes a rule's
// verbs (not omitempty).
func jsonStrings(ss []string) any {
	if ss == nil {
		return nil
	}
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// omitEmpty drops the empty lists of m but its verbs, as the omitempty
// fields of kube's rules.
func omitEmpty(m map[string]any) map[string]any {
	for k, v := range m {
		if l, ok := v.([]string); ok {
			if len(l) == 0 {
				delete(m, k)
			} else {
				m[k] = jsonStrings(l)
			}
		}
	}
	return m
}

// reviewAnswer is a new object of res's kind with status, as kube answers
// the reviews that return a fresh object rather than the one posted.
func reviewAnswer(res *resource.Resource, status map[string]any) api.Object {
	return api.Object{"apiVersion": res.APIVersion(), "kind": res.Kind, "metadata": map[string]any{}, "spec": map[string]any{}, "status": status}
}

// tokenReview answers whether Config.Authenticator accepts a bearer token,
// as whom and for which audiences, as kube's TokenReview: a token meant
// for one of the review's audiences, or of the API's when it names none.
// Authenticators that know no audiences (a token file) accept a token for
// the API's audiences only, as kube's audience-agnostic wrapper.
func (s *Server) tokenReview(ctx context.Context, res *resource.Resource, obj api.Object) (api.Object, error) {
	var spec struct {
		Token     string   `json:"token"`
		Audiences []string `json:"audiences"`
	}
	if err := typed(res, obj["spec"], &spec); err != nil {
		return nil, err
	}
	if spec.Token == "" {
		return nil, apierror.BadRequest("token is required for TokenReview in authentication")
	}
	status := map[string]any{"user": map[string]any{}}
	obj["status"] = status
	if s.cfg.Authenticator == nil {
		return obj, nil
	}
	var apiAudiences []string
	if s.cfg.ServiceAccountTokens != nil {
		apiAudiences = s.cfg.ServiceAccountTokens.Audiences()
	}
	auds := spec.Audiences
	if len(auds) == 0 {
		auds = apiAudiences
	}
	if len(auds) > 0 {
		ctx = authn.WithAudiences(ctx, auds)
	}
	r, err := http.NewRequestWithContext(ctx, http.MethodPost, "/", http.NoBody)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	r.Header.Set("Authorization", "Bearer "+spec.Token) // nothing but the token, as kube
	user, ok, err := s.cfg.Authenticator.Authenticate(r)
	if ok && user.Audiences == nil && len(auds) > 0 {
		agnostic := *user
		agnostic.Audiences = authn.CommonAudiences(apiAudiences, auds)
		user, ok = &agnostic, len(agnostic.Audiences) > 0
	}
	if ok {
		status["authenticated"] = true
		status["user"] = userInfo(user)
		if len(user.Audiences) > 0 {
			status["audiences"] = jsonStrings(user.Audiences)
		}
	}
	if err != nil {
		status["error"] = err.Error()
	}
	return obj, nil
}

// selfSubjectReview is the request's user as the server knows it
// (kube's SelfSubjectReview, created now).
func selfSubjectReview(res *resource.Resource, user *authn.User) api.Object {
	return api.Object{
		"apiVersion": res.APIVersion(), "kind": res.Kind,
		"metadata": map[string]any{"creationTimestamp": time.Now().UTC().Format(time.RFC3339)},
		"status":   map[string]any{"userInfo": userInfo(user)},
	}
}

// userInfo is user as authentication.k8s.io's UserInfo.
func userInfo(user *authn.User) map[string]any {
	info := map[string]any{}
	if user.Name != "" {
		info["username"] = user.Name
	}
	if user.UID != "" {
		info["uid"] = user.UID
	}
	if len(user.Groups) > 0 {
		info["groups"] = jsonStrings(user.Groups)
	}
	if len(user.Extra) > 0 {
		extra := make(map[string]any, len(user.Extra))
		for k, v := range user.Extra {
			extra[k] = jsonStrings(v)
		}
		info["extra"] = extra
	}
	return info
}

// authorizer is Config.Authorizer, or AlwaysAllow when there is none.
func (s *Server) authorizer() authz.Authorizer {
	if s.cfg.Authorizer == nil {
		return authz.AlwaysAllow{}
	}
	return s.cfg.Authorizer
}

// ruleResolver is Config.RuleResolver, else the authorizer if it lists
// rules too; nil if neither does.
func (s *Server) ruleResolver() authz.RuleResolver {
	if s.cfg.RuleResolver != nil {
		return s.cfg.RuleResolver
	}
	r, _ := s.authorizer().(authz.RuleResolver)
	return r
}
