package crd

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// approvalAnnotation records where an API in a protected group was approved
// (https://github.com/kubernetes/enhancements/pull/1111).
const approvalAnnotation = "api-approved.kubernetes.io"

// approvalPath is the annotation's field in causes, as kube writes it.
const approvalPath = "metadata.annotations[" + approvalAnnotation + "]"

// protectedGroup reports whether group belongs to the Kubernetes project
// (k8s.io, kubernetes.io and their subdomains), whose definitions must say
// where their API was approved, as kube's IsProtectedCommunityGroup.
func protectedGroup(group string) bool {
	for _, domain := range []string{"k8s.io", "kubernetes.io"} {
		if group == domain || strings.HasSuffix(group, "."+domain) {
			return true
		}
	}
	return false
}

// approval is a definition's API approval state, as kube's
// GetAPIApprovalState: its KubernetesAPIApprovalPolicyConformant condition's
// reason and message.
type approval struct{ reason, message string }

// approvalOf reads the approval annotation.
func approvalOf(annotations map[string]string) approval {
	a := annotations[approvalAnnotation]
	u, err := url.ParseRequestURI(a)
	switch {
	case a == "":
		return approval{"MissingAnnotation", fmt.Sprintf("protected groups must have approval annotation %q, see https://github.com/kubernetes/enhancements/pull/1111", approvalAnnotation)}
	case strings.HasPrefix(a, "unapproved"):
		return approval{"UnapprovedAnnotation", fmt.Sprintf("not approved: %q", a)}
	case err == nil && u.Host != "" && u.Scheme != "":
		return approval{"ApprovedAnnotation", "approved in " + a}
	}
	return approval{"InvalidAnnotation", fmt.Sprintf("protected groups must have approval annotation %q with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111", approvalAnnotation)}
}

// checkApproval adds kube's validateAPIApproval causes: a definition in a
// protected group needs a URL or an "unapproved..." reason, unless an update
// leaves the state as it was (old is nil on create).
func (c *checker) checkApproval(d, old *definition) {
	if !protectedGroup(d.Spec.Group) {
		return
	}
	a := approvalOf(d.Metadata.Annotations)
	if old != nil && approvalOf(old.Metadata.Annotations).reason == a.reason {
		return
	}
	switch a.reason {
	case "MissingAnnotation":
		c.add(api.CauseTypeFieldValueRequired, approvalPath, "Required value: "+a.message)
	case "InvalidAnnotation":
		c.add(api.CauseTypeFieldValueInvalid, approvalPath, fmt.Sprintf("Invalid value: %q: %s", d.Metadata.Annotations[approvalAnnotation], a.message))
	}
}

// approvalCondition is the KubernetesAPIApprovalPolicyConformant condition
// kube's apiapproval controller sets on definitions of protected groups:
// True when approved, False otherwise; nil for other groups.
func approvalCondition(d *definition, prev []any, now string) map[string]any {
	if !protectedGroup(d.Spec.Group) {
		return nil
	}
	a := approvalOf(d.Metadata.Annotations)
	status := "False"
	if a.reason == "ApprovedAnnotation" {
		status = "True"
	}
	return condition(prev, "KubernetesAPIApprovalPolicyConformant", status, a.reason, a.message, now)
}
