// Package policy holds kube-apiserver's default RBAC policy and keeps it in
// a store as kube does.
//
// The defaults (the ClusterRoles cluster-admin, admin, edit, view and
// their system:aggregate-to-* parts, system:discovery, system:basic-user,
// the system:controller:* roles, their bindings, and the Roles and
// RoleBindings of kube-system and kube-public) are generated from the data
// Kubernetes publishes (defaults_generated.go; go generate refreshes it).
//
// Ensure creates those missing and reconciles the others as kube's
// reconciliation package does: an object annotated
// rbac.authorization.kubernetes.io/autoupdate: "false" is left alone;
// otherwise missing rules, aggregation selectors, subjects, labels and
// annotations are added, and nothing is removed, so a user's additions
// stay. A binding whose roleRef changed is deleted and created again. An
// object that needs nothing is not written, so a restart writes nothing.
//
// Aggregator is kube's clusterroleaggregation controller: the rules of a
// ClusterRole with an aggregationRule are the rules of the ClusterRoles its
// selectors match, in kube's order (selector by selector, roles by name),
// each rule once. It keeps a view of every ClusterRole, fed by its caller
// (Resync with all of them, Changed with one change), and writes the
// aggregated roles that differ.
//
// Several servers may share a store: every write is a compare-and-swap of
// the latest state, computed again on a conflict, and what each server
// writes is a function of the stored objects, so they converge.
package policy

//go:generate go run ./gen
