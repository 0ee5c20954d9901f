// Package authz decides whether a user may do what a request asks, as
// kube-apiserver's authorizers do: a request's Attributes (who, which verb,
// on which resource or path) get a Decision.
package authz

import (
	"context"
	"fmt"

	"github.com/listwatch/listwatch/internal/server/authn"
)

// Attributes are what a request asks to do, as kube's authorizer.Attributes.
type Attributes struct {
	User *authn.User
	// Verb is kube's verb of a resource request (get, list, watch, create,
	// update, patch, delete, deletecollection, or a special verb such as
	// impersonate, escalate, bind), or the lower-case HTTP method of a
	// non-resource request.
	Verb string
	// ResourceRequest is false for a non-resource path (Path).
	ResourceRequest bool
	Namespace       string
	APIGroup        string
	APIVersion      string
	Resource        string
	Subresource     string
	Name            string
	// Path is the request's URL path, for non-resource requests.
	Path string
}

// Decision is an authorizer's answer.
type Decision int

// The decisions, as kube's.
const (
	// NoOpinion lets the next authorizer decide; if none does, the request
	// is denied.
	NoOpinion Decision = iota
	Allow
	Deny
)

// Authorizer decides a request. reason, possibly empty, says why; it is
// appended to the 403 message of a request that is not allowed. err is a
// failure to decide (an authorizer that could not read its rules), which
// denies the request too.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AlwaysAllow allows every request: the authorization of a server whose
// only users are on loopback (kube's --authorization-mode=AlwaysAllow).
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return Allow, "", nil
}

// RulesFor implements RuleResolver: every verb on everything, as kube's
// AlwaysAllow answers.
func (AlwaysAllow) RulesFor(context.Context, *authn.User, string) ([]Rule, error) {
	all := []string{"*"}
	return []Rule{{Verbs: all, APIGroups: all, Resources: all}, {Verbs: all, NonResourceURLs: all}}, nil
}

// Rule is an RBAC PolicyRule: the verbs it allows on resources of API
// groups (optionally by name), or on non-resource URLs. Its JSON is
// rbacv1.PolicyRule's, as stored.
type Rule struct {
	Verbs           []string `json:"verbs"`
	APIGroups       []string `json:"apiGroups,omitempty"`
	Resources       []string `json:"resources,omitempty"`
	ResourceNames   []string `json:"resourceNames,omitempty"`
	NonResourceURLs []string `json:"nonResourceURLs,omitempty"`
}

// RoleRef is an RBAC binding's roleRef, as stored.
type RoleRef struct {
	APIGroup string `json:"apiGroup"`
	Kind     string `json:"kind"`
	Name     string `json:"name"`
}

// Subject is an RBAC binding's subject, as stored: a User, Group or
// ServiceAccount.
type Subject struct {
	Kind      string `json:"kind"`
	APIGroup  string `json:"apiGroup,omitempty"`
	Name      string `json:"name"`
	Namespace string `json:"namespace,omitempty"`
}

// RuleResolver lists the rules a user holds in a namespace (the rules of
// cluster-wide bindings included; "" for the cluster-wide ones only), as
// SelfSubjectRulesReview and escalation checks need them. The rules are
// complete unless err is not nil: then they are those that could be read.
type RuleResolver interface {
	RulesFor(ctx context.Context, user *authn.User, namespace string) ([]Rule, error)
}

// ForbiddenMessage is kube's text of a request a user may not make
// (forbiddenMessage in k8s.io/apiserver's responsewriters), which tooling
// parses.
func ForbiddenMessage(a Attributes) string {
	name := ""
	if a.User != nil {
		name = a.User.Name
	}
	if !a.ResourceRequest {
		return fmt.Sprintf("User %q cannot %s path %q", name, a.Verb, a.Path)
	}
	resource := a.Resource
	if a.Subresource != "" {
		resource += "/" + a.Subresource
	}
	if a.Namespace != "" {
		return fmt.Sprintf("User %q cannot %s resource %q in API group %q in the namespace %q", name, a.Verb, resource, a.APIGroup, a.Namespace)
	}
	return fmt.Sprintf("User %q cannot %s resource %q in API group %q at the cluster scope", name, a.Verb, resource, a.APIGroup)
}
