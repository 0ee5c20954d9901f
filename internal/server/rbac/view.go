package rbac

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/listwatch/listwatch/internal/follow"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// Group is the API group of the RBAC kinds.
const Group = "rbac.authorization.k8s.io"

// The RBAC resources the View follows.
const (
	roles               = "roles"
	clusterRoles        = "clusterroles"
	roleBindings        = "rolebindings"
	clusterRoleBindings = "clusterrolebindings"
)

// object is what the View reads of a stored role or binding.
type object struct {
	Metadata struct {
		Name      string `json:"name"`
		Namespace string `json:"namespace"`
	} `json:"metadata"`
	Rules           []authz.Rule    `json:"rules"`
	RoleRef         authz.RoleRef   `json:"roleRef"`
	Subjects        []authz.Subject `json:"subjects"`
	AggregationRule *struct {
		ClusterRoleSelectors []json.RawMessage `json:"clusterRoleSelectors"`
	} `json:"aggregationRule"`
}

// binding is a RoleBinding (namespace set) or a ClusterRoleBinding.
type binding struct {
	namespace, name string
	ref             authz.RoleRef
	keys            []subjectKey // where it is indexed
	// allowedBy is, for each key, kube's reason for a request it allows
	// ("RBAC: allowed by RoleBinding ..."), made once here so that an
	// allowed request costs no allocation for it.
	allowedBy []string
}

// reason is kube's reason for allowing u's request through b: it names
// the first subject of b that u is, as kube's appliesTo finds it.
func (b *binding) reason(u *authn.User) string {
	for i, k := range b.keys {
		if k.group && slices.Contains(u.Groups, k.name) || !k.group && k.name == u.Name {
			return b.allowedBy[i]
		}
	}
	return ""
}

// subjectKey indexes bindings: a user name (a service account's included)
// or a group, in a namespace ("" for ClusterRoleBindings).
type subjectKey struct {
	namespace string
	group     bool
	name      string
}

// View is the RBAC state of a store, kept current.
type View struct {
	resources map[string]*resource.Resource
	log       *slog.Logger
	followers []*follow.Follower

	mu sync.RWMutex
	// guarded by mu:
	roles        map[string][]authz.Rule // "namespace/name" ->
	clusterRoles map[string][]authz.Rule
	bindings     map[string]*binding // storage key ->
	bySubject    map[subjectKey]map[*binding]struct{}
}

// Start loads the RBAC objects of store and follows them until Close.
// resources are those the server serves (resource.Builtins), among which
// the four RBAC kinds.
func Start(ctx context.Context, store storage.Interface, resources []*resource.Resource, log *slog.Logger) (*View, error) {
	v := &View{
		resources: map[string]*resource.Resource{}, log: log,
		roles: map[string][]authz.Rule{}, clusterRoles: map[string][]authz.Rule{},
		bindings: map[string]*binding{}, bySubject: map[subjectKey]map[*binding]struct{}{},
	}
	for _, res := range resources {
		if res.Group == Group {
			v.resources[res.Plural] = res
		}
	}
	for _, plural := range []string{roles, clusterRoles, roleBindings, clusterRoleBindings} {
		res, ok := v.resources[plural]
		if !ok {
			v.Close()
			return nil, fmt.Errorf("rbac: no %s resource", plural)
		}
		f, err := follow.Start(ctx, store, res.KeyPrefix(""), res.Kind+"s", func(key string, _ int64, value []byte) { v.apply(res, key, value) }, log)
		if err != nil {
			v.Close()
			return nil, err
		}
		v.followers = append(v.followers, f)
	}
	return v, nil
}

// Close stops following the store.
func (v *View) Close() {
	for _, f := range v.followers {
		f.Close()
	}
}

// Refresh applies the stored state of one RBAC object written through this
// server, so that the next request sees it. Other resources are ignored.
func (v *View) Refresh(ctx context.Context, res *resource.Resource, namespace, name string) error {
	if res.Group != Group {
		return nil
	}
	for i, plural := range []string{roles, clusterRoles, roleBindings, clusterRoleBindings} {
		if res.Plural == plural {
			_, err := v.followers[i].Refresh(ctx, v.resources[plural].Key(namespace, name))
			return err
		}
	}
	return nil
}

// apply puts the object stored at key in the view, or takes it out.
func (v *View) apply(res *resource.Resource, key string, value []byte) {
	var o *object
	if value != nil {
		o = new(object)
		if err := json.Unmarshal(value, o); err != nil {
			v.log.Error("stored RBAC object is not readable; ignoring it", "key", key, "err", err)
			o = nil
		}
	}
	ns := res.NamespaceOfKey(key)
	name := strings.TrimPrefix(key, res.KeyPrefix(ns))
	v.mu.Lock()
	defer v.mu.Unlock()
	switch res.Plural {
	case roles:
		setOrDelete(v.roles, ns+"/"+name, o)
	case clusterRoles:
		setOrDelete(v.clusterRoles, name, o)
	default:
		v.unindex(key)
		if o != nil {
			v.index(key, ns, name, o)
		}
	}
}

func setOrDelete(m map[string][]authz.Rule, k string, o *object) {
	if o == nil {
		delete(m, k)
		return
	}
	m[k] = o.Rules
}

// index adds a binding under each of its subjects. A service account is
// indexed by its user name; one without a namespace is in a RoleBinding's
// namespace, and matches nothing in a ClusterRoleBinding, as in kube's
// appliesToUser.
func (v *View) index(key, ns, name string, o *object) {
	b := &binding{namespace: ns, name: name, ref: o.RoleRef}
	// kube's describers of a binding and its subject (rule.go).
	source := "RBAC: allowed by ClusterRoleBinding " + strconv.Quote(name)
	if ns != "" {
		source = "RBAC: allowed by RoleBinding " + strconv.Quote(name+"/"+ns)
	}
	source += " of " + o.RoleRef.Kind + " " + strconv.Quote(o.RoleRef.Name) + " to "
	for _, s := range o.Subjects {
		k := subjectKey{namespace: ns, name: s.Name}
		described := s.Name
		switch s.Kind {
		case "User":
		case "Group":
			k.group = true
		case "ServiceAccount":
			saNamespace := s.Namespace
			if saNamespace == "" {
				saNamespace = ns
			}
			if saNamespace == "" {
				continue
			}
			k.name = authn.ServiceAccountUser(saNamespace, s.Name)
			described = s.Name + "/" + saNamespace
		default:
			continue
		}
		b.allowedBy = append(b.allowedBy, source+s.Kind+" "+strconv.Quote(described))
		set := v.bySubject[k]
		if set == nil {
			set = map[*binding]struct{}{}
			v.bySubject[k] = set
		}
		set[b] = struct{}{}
		b.keys = append(b.keys, k)
	}
	v.bindings[key] = b
}

func (v *View) unindex(key string) {
	b, ok := v.bindings[key]
	if !ok {
		return
	}
	for _, k := range b.keys {
		delete(v.bySubject[k], b)
		if len(v.bySubject[k]) == 0 {
			delete(v.bySubject, k)
		}
	}
	delete(v.bindings, key)
}

// visit calls fn with each rule of the bindings of u in the cluster, then
// in namespace (unless it is ""), as kube's VisitRulesFor, until fn
// returns false; the roles that bindings name and that do not exist are
// returned as errors, in kube's lister words. The caller holds v.mu for
// reading.
func (v *View) visit(u *authn.User, namespace string, fn func(b *binding, r *authz.Rule) bool) []error {
	var errs []error
	scopes := [2]string{"", namespace}
	n := 1
	if namespace != "" {
		n = 2
	}
	var seenBuf [8]*binding
	seen := seenBuf[:0] // a binding matched by more than one subject is visited once
	for _, scope := range scopes[:n] {
		for i := -1; i < len(u.Groups); i++ {
			k := subjectKey{namespace: scope, name: u.Name}
			if i >= 0 {
				k = subjectKey{namespace: scope, group: true, name: u.Groups[i]}
			}
			for b := range v.bySubject[k] {
				if len(b.keys) > 1 {
					if containsBinding(seen, b) {
						continue
					}
					seen = append(seen, b)
				}
				rules, err := v.roleRules(b.ref, b.namespace, listerNotFound)
				if err != nil {
					errs = append(errs, err)
					continue
				}
				for j := range rules {
					if !fn(b, &rules[j]) {
						return errs
					}
				}
			}
		}
	}
	return errs
}

func containsBinding(bs []*binding, b *binding) bool {
	for _, x := range bs {
		if x == b {
			return true
		}
	}
	return false
}

// notFound words a missing role: kube's informer listers (the authorizer)
// and its registries (escalation checks) name it differently.
type notFound func(kind, name string) error

func listerNotFound(kind, name string) error {
	return fmt.Errorf("%s.%s %q not found", strings.ToLower(kind), Group, name)
}

// errRoleRefKind is kube's answer to a roleRef of another kind.
var errRoleRefKind = errors.New("unsupported role reference kind")

// roleRules are the rules ref names, for a binding in namespace. The
// caller holds v.mu for reading.
func (v *View) roleRules(ref authz.RoleRef, namespace string, missing notFound) ([]authz.Rule, error) {
	switch ref.Kind {
	case "Role":
		if rules, ok := v.roles[namespace+"/"+ref.Name]; ok {
			return rules, nil
		}
	case "ClusterRole":
		if rules, ok := v.clusterRoles[ref.Name]; ok {
			return rules, nil
		}
	default:
		return nil, fmt.Errorf("%w: %q", errRoleRefKind, ref.Kind)
	}
	return nil, missing(ref.Kind, ref.Name)
}
