package validation

import (
	"context"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/quantity"
)

// claimStatusUpdate is kube's ValidatePersistentVolumeClaimStatusUpdate
// with RecoverVolumeExpansionFailure (GA) on, less the health conditions
// of the alpha CSIVolumeHealth (off): a resourceVersion to write against,
// access modes in the stored spec, and capacities and allocated
// resources that are not negative, on resource names a claim has.
func claimStatusUpdate(ctx context.Context, o, old api.Object) []api.StatusCause {
	c := causes(versionedStatusUpdate(ctx, o, old))
	if len(list(object(old, "spec"), "accessModes")) == 0 {
		c.required("Spec.accessModes", "") // sic: kube's path
	}
	status := object(o, "status")
	p := path("status")
	for name, q := range stringMap(status, "capacity") {
		c.basicResource(p.child("capacity").key(name), q)
	}
	sp := p.child("allocatedResourceStatuses")
	for name, s := range stringMap(status, "allocatedResourceStatuses") {
		c.claimResourceName(sp, name)
		if !slices.Contains(resizeStatuses, s) {
			c.notSupported(sp, name, resizeStatuses...) // sic: the name, not the status
		}
	}
	ap := p.child("allocatedResources")
	for name, q := range stringMap(status, "allocatedResources") {
		if !c.claimResourceName(ap, name) {
			continue
		}
		// kube then checks it is not negative, which basicResource has
		// said: the Value of a negative quantity is at most -1.
		c.basicResource(ap.key(name), q)
	}
	return c
}

// resizeStatuses are kube's ClaimResourceStatuses, sorted.
var resizeStatuses = []string{"ControllerResizeInProgress", "ControllerResizeInfeasible", "NodeResizeInProgress", "NodeResizeInfeasible", "NodeResizePending"}

// claimResourceName is kube's validatePersistentVolumeClaimResourceKey: a
// qualified name, storage if native. It says whether name is valid.
func (c *causes) claimResourceName(p path, name string) bool {
	n := len(*c)
	c.qualifiedName(p, name)
	if len(*c) == n && (!strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")) && name != "storage" {
		c.notSupported(p, name, "storage")
	}
	return len(*c) == n
}

// basicResource is kube's validateBasicResource: the quantity's Value
// (rounded away from zero to an integer) not negative.
func (c *causes) basicResource(p path, q string) {
	// the schema's quantity format refused what fails to parse
	if v, err := quantity.Parse(q); err == nil && v.Value() < 0 {
		c.invalid(p, v.Value(), "must be a valid resource quantity")
	}
}
