package rbac

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// fullAuthority is every permission: what setting a ClusterRole's
// aggregationRule needs, as in kube.
var fullAuthority = []authz.Rule{
	{Verbs: []string{all}, APIGroups: []string{all}, Resources: []string{all}},
	{Verbs: []string{all}, NonResourceURLs: []string{all}},
}

// Guard refuses a write of a role or a binding that would grant more than
// its writer holds, as kube's policybased storage: a role's rules must be
// held by its writer in the role's namespace (cluster-wide for a
// ClusterRole) unless they may `escalate` it; a binding's role's rules
// likewise unless they may `bind` it. Members of system:masters may write
// anything.
type Guard struct {
	view       *View
	authorizer authz.Authorizer // asked about escalate and bind
}

// NewGuard returns the guard of v's roles, asking a about the escalate and
// bind verbs.
func NewGuard(v *View, a authz.Authorizer) *Guard { return &Guard{view: v, authorizer: a} }

// refreshTimeout bounds the read of an RBAC object written through this
// server, after the write.
const refreshTimeout = time.Minute

// Written applies an RBAC object written through this server to the
// view, before the response goes out (server.WriteHook).
func (g *Guard) Written(res *resource.Resource, namespace, name string) {
	if res.Group != Group {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), refreshTimeout)
	defer cancel()
	if err := g.view.Refresh(ctx, res, namespace, name); err != nil {
		g.view.log.Error("refreshing the RBAC view", "resource", res.Plural, "namespace", namespace, "name", name, "err", err)
	}
}

// CheckWrite checks obj, about to be written by the request a (create,
// update, patch or apply); old is the stored object, nil on create. It
// returns kube's 403 (or 404 for a binding's missing role) to refuse it.
func (g *Guard) CheckWrite(ctx context.Context, a authz.Attributes, obj, old api.Object) error {
	if a.APIGroup != Group || a.User == nil || slices.Contains(a.User.Groups, authn.SystemPrivilegedGroup) {
		return nil
	}
	switch a.Resource {
	case roles, clusterRoles, roleBindings, clusterRoleBindings:
	default:
		return nil
	}
	if old != nil && OnlyGCFieldsChanged(obj, old) {
		return nil
	}
	o, err := read(obj)
	if err != nil {
		return apierror.BadRequest(err.Error())
	}
	switch a.Resource {
	case roles, clusterRoles:
		return g.checkRole(ctx, a, o, old)
	case roleBindings:
		return g.checkBinding(ctx, a, o, a.Namespace)
	}
	return g.checkBinding(ctx, a, o, "")
}

func (g *Guard) checkRole(ctx context.Context, a authz.Attributes, o *object, old api.Object) error {
	escalate := authz.Attributes{
		User: a.User, Verb: "escalate", ResourceRequest: true,
		APIGroup: a.APIGroup, APIVersion: "*", Resource: a.Resource, Name: a.Name, Namespace: a.Namespace,
	}
	if g.allowed(ctx, escalate) {
		return nil
	}
	name := o.Metadata.Name
	if err := g.confirmNoEscalation(ctx, a.User, a.Namespace, o.Rules); err != nil {
		return forbidden(a.Resource, name, err.Error())
	}
	if a.Resource != clusterRoles {
		return nil
	}
	var was *object
	if old != nil {
		was, _ = read(old)
	}
	if aggregates(o) || aggregates(was) {
		if err := g.confirmNoEscalation(ctx, a.User, "", fullAuthority); err != nil {
			return forbidden(a.Resource, name, "must have cluster-admin privileges to use the aggregationRule")
		}
	}
	return nil
}

// checkBinding checks a binding in namespace ("" for a
// ClusterRoleBinding), as kube's BindingAuthorized then
// GetRoleReferenceRules and ConfirmNoEscalation.
func (g *Guard) checkBinding(ctx context.Context, a authz.Attributes, o *object, namespace string) error {
	ref := o.RoleRef
	bind := authz.Attributes{User: a.User, Verb: "bind", ResourceRequest: true, Namespace: namespace, APIGroup: ref.APIGroup, Name: ref.Name}
	switch ref.Kind {
	case "Role":
		bind.Resource = roles
	case "ClusterRole":
		bind.Resource = clusterRoles
	default:
		return nil // validation refuses it, and it would grant nothing
	}
	if g.allowed(ctx, bind) {
		return nil
	}
	g.view.mu.RLock()
	rules, err := g.view.roleRules(ref, namespace, registryNotFound)
	g.view.mu.RUnlock()
	if err != nil {
		return err
	}
	if err := g.confirmNoEscalation(ctx, a.User, a.Namespace, rules); err != nil {
		return forbidden(a.Resource, o.Metadata.Name, err.Error())
	}
	return nil
}

func (g *Guard) allowed(ctx context.Context, a authz.Attributes) bool {
	d, _, _ := g.authorizer.Authorize(ctx, a)
	return d == authz.Allow
}

// registryNotFound is kube's registry's 404 for a binding's missing role.
func registryNotFound(kind, name string) error {
	return apierror.NotFound(apierror.Target{Group: Group, Resource: strings.ToLower(kind) + "s", Name: name})
}

// confirmNoEscalation fails unless user holds every rule in namespace, in
// kube's words (ConfirmNoEscalation).
func (g *Guard) confirmNoEscalation(ctx context.Context, user *authn.User, namespace string, rules []authz.Rule) error {
	owner, resolveErr := NewAuthorizer(g.view).RulesFor(ctx, user, namespace)
	missing, err := authz.Covers(owner, rules)
	if err != nil {
		return fmt.Errorf("user %q (groups=%q) is attempting to grant %w, too many to check against the permissions held", user.Name, user.Groups, err)
	}
	if len(missing) == 0 {
		return nil
	}
	var lines []string
	for _, r := range compact(missing) {
		lines = append(lines, compactString(r))
	}
	slices.Sort(lines)
	lines = slices.Compact(lines)
	msg := fmt.Sprintf("user %q (groups=%q) is attempting to grant RBAC permissions not currently held:\n%s", user.Name, user.Groups, strings.Join(lines, "\n"))
	if resolveErr != nil {
		msg += fmt.Sprintf("; resolution errors: [%v]", resolveErr)
	}
	return errors.New(msg)
}

func forbidden(resource, name, why string) error {
	return apierror.ForbiddenTo(apierror.Target{Group: Group, Resource: resource, Name: name}, why)
}

// read reads what the guard checks of a role or binding.
func read(obj api.Object) (*object, error) {
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	o := new(object)
	if err := json.Unmarshal(b, o); err != nil {
		return nil, fmt.Errorf("reading the %s: %w", obj.Kind(), err)
	}
	return o, nil
}

func aggregates(o *object) bool {
	return o != nil && o.AggregationRule != nil && len(o.AggregationRule.ClusterRoleSelectors) > 0
}

// gcFields are what the garbage collector changes (and what a write's
// bookkeeping does).
var gcFields = []string{"ownerReferences", "finalizers", "resourceVersion", "managedFields"}

// OnlyGCFieldsChanged is kube's IsOnlyMutatingGCFields: an update changing
// nothing but gcFields, which kube's permission checks let through.
func OnlyGCFieldsChanged(obj, old api.Object) bool {
	strip := func(o api.Object) api.Object {
		c := o.DeepCopy()
		for _, f := range gcFields {
			delete(c.EnsureMetadata(), f)
		}
		return c
	}
	return reflect.DeepEqual(strip(obj), strip(old))
}
