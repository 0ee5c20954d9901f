// Package rbac authorizes requests with the Roles, ClusterRoles,
// RoleBindings and ClusterRoleBindings in the store, as kube-apiserver's
// RBAC authorizer (plugin/pkg/auth/authorizer/rbac) and rule resolver
// (pkg/registry/rbac/validation) do, and refuses writes of roles and
// bindings that would grant more than their writer holds (kube's
// policybased storage: escalation prevention).
//
// # Semantics
//
// A request is allowed when a rule of a role bound to its user allows it:
// a rule matches a verb, an API group, a resource ("*", "pods/status",
// "*/scale"), a name (no resourceNames: any) or a non-resource URL (a
// trailing "*" matches a prefix). Bindings name users, groups and service
// accounts (system:serviceaccount:<namespace>:<name>; a RoleBinding's
// subject without a namespace is in the binding's). ClusterRoleBindings
// grant everywhere, RoleBindings in their namespace only, a ClusterRole
// they reference included. A binding to a role that does not exist grants
// nothing; a denial then says why, as kube's. Nothing is ever denied
// explicitly: RBAC allows or has no opinion.
//
// # Concurrency and cost
//
// The View is kept current by one follow.Follower per kind (a goroutine
// each, stopped by Close); a write through this server is applied before
// its response goes out (Refresh). Bindings are indexed by subject and
// scope, so that deciding a request costs the bindings of its user and
// groups, not all of them; roles are looked up by name at each decision,
// so a changed role takes effect at once. Readers share a RWMutex.
package rbac
