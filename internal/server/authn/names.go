package authn

import "strings"

// The names kube gives users and groups (k8s.io/apiserver's user and
// serviceaccount packages): the groups of every authenticated user and of
// anonymous requests, and of every service account; the user of anonymous
// requests; the group that may do anything (authorized before RBAC, its
// writes never checked for escalation, exempt from the in-flight limits).
const (
	AllAuthenticated      = "system:authenticated"
	AllUnauthenticated    = "system:unauthenticated"
	AllServiceAccounts    = "system:serviceaccounts"
	Anonymous             = "system:anonymous"
	SystemPrivilegedGroup = "system:masters"
)

// serviceAccountPrefix starts a service account's user name.
const serviceAccountPrefix = "system:serviceaccount:"

// ServiceAccountUser is the user name of service account name in
// namespace, system:serviceaccount:<namespace>:<name>, as kube's
// MakeUsername.
func ServiceAccountUser(namespace, name string) string {
	return serviceAccountPrefix + namespace + ":" + name
}

// ServiceAccountGroups are the groups of a service account in namespace,
// as kube's MakeGroupNames: system:serviceaccounts and
// system:serviceaccounts:<namespace>.
func ServiceAccountGroups(namespace string) []string {
	return []string{AllServiceAccounts, AllServiceAccounts + ":" + namespace}
}

// SplitServiceAccountUser reads the namespace and name of a service
// account's user name. It checks the shape only (one colon between two
// non-empty parts); whether they are valid names is for the caller to
// check, as kube's SplitUsername does.
func SplitServiceAccountUser(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, serviceAccountPrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}
