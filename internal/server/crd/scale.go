package crd

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// scale is a version's subresources.scale.
type scale struct {
	SpecReplicasPath   string  `json:"specReplicasPath"`
	StatusReplicasPath string  `json:"statusReplicasPath"`
	LabelSelectorPath  *string `json:"labelSelectorPath"`
}

// scalePaths returns the paths the scale subresource reads and writes, or
// nil when the version has none.
func (v *version) scalePaths() *resource.ScalePaths {
	if v.Subresources == nil || v.Subresources.Scale == nil {
		return nil
	}
	sc := v.Subresources.Scale
	p := &resource.ScalePaths{SpecReplicas: sc.SpecReplicasPath, StatusReplicas: sc.StatusReplicasPath}
	if sc.LabelSelectorPath != nil {
		p.LabelSelector = *sc.LabelSelectorPath
	}
	p.Columns = columns(scaleColumns)
	return p
}

// scaleColumns are the columns of a custom resource's Scale in a Table, as
// kube's getScaleColumnsForVersion gives its scale table convertor (both
// replicas paths are required, so both columns are always there).
var scaleColumns = []printerColumn{
	{Name: "Desired", Type: "integer", Description: "Number of desired replicas", JSONPath: ".spec.replicas"},
	{Name: "Available", Type: "integer", Description: "Number of actual replicas", JSONPath: ".status.replicas"},
	defaultColumns[0],
}

// scale checks subresources.scale as kube's
// ValidateCustomResourceDefinitionSubresources: simple JSON paths, the
// replicas under .spec and .status, the selector under either.
func (c *checker) scale(path string, v *version) {
	if v.Subresources == nil || v.Subresources.Scale == nil {
		return
	}
	sc := v.Subresources.Scale
	if !c.required(path+".scale.specReplicasPath", sc.SpecReplicasPath) {
		c.scalePath(path+".scale.specReplicasPath", sc.SpecReplicasPath, "should be a json path under .spec", ".spec.")
	}
	if !c.required(path+".scale.statusReplicasPath", sc.StatusReplicasPath) {
		c.scalePath(path+".scale.statusReplicasPath", sc.StatusReplicasPath, "should be a json path under .status", ".status.")
	}
	if sc.LabelSelectorPath != nil && *sc.LabelSelectorPath != "" {
		c.scalePath(path+".scale.labelSelectorPath", *sc.LabelSelectorPath, "should be a json path under either .spec or .status", ".spec.", ".status.")
	}
}

// scalePath requires p to be a simple JSON path under one of prefixes.
func (c *checker) scalePath(path, p, under string, prefixes ...string) {
	switch {
	case p[0] != '.':
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %q: must be a simple json path starting with .", p))
	case !slices.ContainsFunc(prefixes, func(pre string) bool { return strings.HasPrefix(p, pre) }):
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %q: %s", p, under))
	}
}

// scaleChecks adds to validate kube's ValidateScaleSpec and
// ValidateScaleStatus: the replicas are integers in [0, MaxInt32].
func scaleChecks(validate func(api.Object) []api.StatusCause, p *resource.ScalePaths) func(api.Object) []api.StatusCause {
	return func(obj api.Object) []api.StatusCause {
		var c checker
		if validate != nil {
			c.causes = validate(obj)
		}
		c.replicas(obj, p.SpecReplicas)
		c.replicas(obj, p.StatusReplicas)
		return c.causes
	}
}

// replicas checks the replicas at path, a cause for the path as kube
// names it (".spec.replicas").
func (c *checker) replicas(obj api.Object, path string) {
	n, _, err := resource.Replicas(obj, path)
	switch {
	case err != nil:
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: 0: %v", err))
	case n < 0:
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %d: should be a non-negative integer", n))
	case n > math.MaxInt32:
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %d: should be less than or equal to %d", n, math.MaxInt32))
	}
}
