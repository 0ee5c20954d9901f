package resource

import (
	"fmt"
	"maps"
)

// selectableFields are the field selectors kube accepts for a built-in
// kind beyond metadata.name and metadata.namespace: the labels of its field
// label conversion function (pkg/apis/<group>/<version>/conversion.go), each
// read from where its registry's GetAttrs reads it. A conversion function
// names metadata.namespace itself, so kinds with one accept it only when
// namespaced; kinds without one get kube's DefaultMetaV1FieldSelectorConversion,
// which accepts it for every kind (a cluster-scoped object's reads "").
type selectableFields struct {
	paths map[string][]string
	// defaults are what a field that reads "" holds in kube, whose
	// GetAttrs print an absent number as 0 and an absent bool as false.
	defaults map[string]string
	// noNamespace is set for the namespaced kinds whose function does not
	// name metadata.namespace.
	noNamespace bool
	// message is kube's error for another label, a format of it (%s or
	// %q); "" means "field label not supported: %s", most functions' own.
	message string
}

// selectable are the kinds with a field label conversion function in the
// versions served, by group/version/plural; events have theirs in events.go.
var selectable = map[GVR]selectableFields{
	{"", "v1", "pods"}: {paths: map[string][]string{
		"spec.nodeName":           {"spec", "nodeName"},
		"spec.host":               {"spec", "nodeName"}, // old clients' name of it
		"spec.restartPolicy":      {"spec", "restartPolicy"},
		"spec.schedulerName":      {"spec", "schedulerName"},
		"spec.serviceAccountName": {"spec", "serviceAccountName"},
		"spec.hostNetwork":        {"spec", "hostNetwork"},
		"status.phase":            {"status", "phase"},
		// podIPs[0].ip in kube: v1 defaulting keeps podIP equal to it.
		"status.podIP": {"status", "podIP"},
		// Accepted, but GetAttrs has no value for it: a list reads "".
		"status.podIPs":            {"status", "podIPs"},
		"status.nominatedNodeName": {"status", "nominatedNodeName"},
	}, defaults: map[string]string{"spec.hostNetwork": "false"}},
	{"", "v1", "nodes"}: {paths: map[string][]string{"spec.unschedulable": {"spec", "unschedulable"}},
		defaults: map[string]string{"spec.unschedulable": "false"}},
	{"", "v1", "replicationcontrollers"}: {paths: map[string][]string{"status.replicas": {"status", "replicas"}},
		defaults: map[string]string{"status.replicas": "0"}},
	{"", "v1", "namespaces"}: {paths: map[string][]string{"status.phase": {"status", "phase"}}},
	{"", "v1", "secrets"}:    {paths: map[string][]string{"type": {"type"}}},
	{"", "v1", "services"}: {paths: map[string][]string{
		"spec.clusterIP": {"spec", "clusterIP"},
		"spec.type":      {"spec", "type"},
	}},
	{"batch", "v1", "jobs"}: {paths: map[string][]string{"status.successful": {"status", "succeeded"}},
		defaults: map[string]string{"status.successful": "0"}, message: "field label %q not supported for Job"},
	{"certificates.k8s.io", "v1", "certificatesigningrequests"}: {paths: signerName},
	{"certificates.k8s.io", "v1", "clustertrustbundles"}:        {paths: signerName},
	{"certificates.k8s.io", "v1", "podcertificaterequests"}: {paths: map[string][]string{
		"spec.signerName": {"spec", "signerName"},
		"spec.podName":    {"spec", "podName"},
		"spec.nodeName":   {"spec", "nodeName"},
	}, noNamespace: true},
	{"resource.k8s.io", "v1", "resourceslices"}: {paths: map[string][]string{
		"spec.nodeName":  {"spec", "nodeName"},
		"spec.driver":    {"spec", "driver"},
		"spec.pool.name": {"spec", "pool", "name"},
	}, message: "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: %s"},
}

var signerName = map[string][]string{"spec.signerName": {"spec", "signerName"}}

// defaultFieldLabelMessage is kube's DefaultMetaV1FieldSelectorConversion's
// error, for kinds without a conversion function.
const defaultFieldLabelMessage = `%q is not a known field selector: only "metadata.name", "metadata.namespace"`

// selectFields gives a built-in resource kube's field selectors, unless
// behaviours gave it its own (events).
func selectFields(r *Resource) {
	if r.FieldPaths != nil {
		return
	}
	s, ok := selectable[gvrOf(r)]
	if !ok {
		r.FieldLabelMessage = defaultFieldLabelMessage
		if !r.Namespaced {
			r.FieldPaths = map[string][]string{"metadata.namespace": {"metadata", "namespace"}}
		}
		return
	}
	r.FieldPaths, r.FieldDefaults = maps.Clone(s.paths), maps.Clone(s.defaults)
	r.FieldLabelMessage, r.NoNamespaceField = s.message, s.noNamespace
}

// FieldLabelError is the message of the 400 kube answers a field selector
// with a label the resource does not support.
func (r *Resource) FieldLabelError(label string) string {
	if r.FieldLabelMessage == "" {
		return "field label not supported: " + label
	}
	return fmt.Sprintf(r.FieldLabelMessage, label)
}
