// Package validation is kube's Go validation of the built-in kinds
// (k8s.io/kubernetes pkg/apis/<group>/validation, as each registry
// strategy calls it) for the rules users meet first, with kube's field
// paths, cause types and messages. It runs after the schema engine has
// checked types and formats and after kube's defaulting, so it reads a
// mistyped or missing value as absent and relies on the defaults being
// set. docs/ARCHITECTURE.md lists what kube checks that it does not.
package validation

import (
	"context"

	"github.com/listwatch/listwatch/client/api"
)

// Func checks an object about to be written, as a Resource's Validate.
type Func func(obj api.Object) []api.StatusCause

// For returns the validation of the built-in resource group/version/plural,
// or nil when this package has none.
func For(group, version, plural string) Func {
	return byResource[[3]string{group, version, plural}]
}

var byResource = map[[3]string]Func{
	{"", "v1", "pods"}:                   pod,
	{"", "v1", "namespaces"}:             namespace,
	{"", "v1", "replicationcontrollers"}: replicationController,
	{"", "v1", "services"}:               service,
	{"", "v1", "persistentvolumeclaims"}: persistentVolumeClaim,
	{"", "v1", "podtemplates"}:           podTemplate,
	{"apps", "v1", "deployments"}:        deployment,
	{"apps", "v1", "replicasets"}:        replicaSet,
	{"apps", "v1", "daemonsets"}:         daemonSet,
	{"batch", "v1", "cronjobs"}:          cronJob,
}

// CreateFunc checks a new object after Func, as a Resource's
// ValidateCreate: the rules kube applies on create only, which objects
// stored before them need not meet on update; for the kinds whose update
// tolerates some of what the stored object holds (StatefulSets, Jobs,
// Ingresses, NetworkPolicies), all their rules, Func being nil and their
// UpdateFunc checking the rest.
type CreateFunc func(ctx context.Context, obj api.Object) []api.StatusCause

// ForCreate returns the create-only rules of the built-in resource
// group/version/plural, or nil when this package has none.
func ForCreate(group, version, plural string) CreateFunc {
	return creates[[3]string{group, version, plural}]
}

var creates = map[[3]string]CreateFunc{
	{"", "v1", "pods"}:                             podCreate,
	{"apps", "v1", "statefulsets"}:                 statefulSetCreate,
	{"networking.k8s.io", "v1", "ingresses"}:       ingressCreate,
	{"networking.k8s.io", "v1", "networkpolicies"}: networkPolicyCreate,
	{"batch", "v1", "jobs"}:                        jobCreate,
	{"batch", "v1", "cronjobs"}:                    cronJobCreate,
}
