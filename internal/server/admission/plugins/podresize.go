package plugins

import (
	"context"
	"fmt"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
	"github.com/listwatch/listwatch/internal/server/admission/webhook"
	"github.com/listwatch/listwatch/internal/server/defaulting"
)

// podResize is kube's PodResizeValidator (plugin/pkg/admission/podresize):
// a resize of a pod bound to a node that changes its spec is refused
// (403) unless the node is stored, is not labelled with an OS other than
// linux, and its allocatable cpu and memory hold the pod's requests.
type podResize struct{ src Source }

func init() { handledSubresources[[3]string{"", "pods", "resize"}] = true }

func (*podResize) admit(context.Context, *webhook.Attributes) error { return nil }

func (p *podResize) validate(ctx context.Context, a *webhook.Attributes) error {
	if a.Operation != webhook.Update || a.Resource.Group != "" || a.Resource.Resource != "pods" || a.Subresource != "resize" {
		return nil
	}
	spec, _ := a.Object["spec"].(map[string]any)
	nodeName := str(spec, "nodeName")
	// The generation goes up only when the spec changed.
	if nodeName == "" || fmt.Sprint(a.Object.Metadata()["generation"]) == fmt.Sprint(a.OldObject.Metadata()["generation"]) {
		return nil
	}
	node, err := p.src.Get(ctx, Nodes, "", nodeName)
	switch {
	case err != nil:
		return Forbidden(a, fmt.Sprintf("failed to get node %q: %v", nodeName, err))
	case node == nil:
		return Forbidden(a, fmt.Sprintf("node %q not found", nodeName))
	}
	if os, ok := node.Labels()["kubernetes.io/os"]; ok && os != "linux" {
		return resizeRefused(a, fmt.Sprintf("pod resize is only supported on linux nodes, node %q is %q", nodeName, os), "UnsupportedPlatform")
	}
	requests, err := quota.PodRequests(a.Object)
	if err != nil {
		return err
	}
	status, _ := node["status"].(map[string]any)
	allocatable, _ := status["allocatable"].(map[string]any)
	cpu, _ := defaulting.ParseQuantity(allocatable["cpu"])
	mem, _ := defaulting.ParseQuantity(allocatable["memory"])
	var short []string
	if r := requests["cpu"]; r.Cmp(cpu) > 0 {
		short = append(short, fmt.Sprintf("cpu, requested: %d, allocatable: %d", r.MilliValue(), cpu.MilliValue()))
	}
	if r := requests["memory"]; r.Cmp(mem) > 0 {
		short = append(short, fmt.Sprintf("memory, requested: %d, allocatable: %d", r.Value(), mem.Value()))
	}
	if len(short) > 0 {
		return resizeRefused(a, "node didn't have enough allocatable resources: "+strings.Join(short, "; "), "NodeCapacity")
	}
	return nil
}

// resizeRefused is kube's resizeValidationError: Forbidden, with a cause
// of the reason's type alone.
func resizeRefused(a *webhook.Attributes, why string, reason api.CauseType) error {
	err := Forbidden(a, why).(*api.StatusError)
	err.Status.Details.Causes = append(err.Status.Details.Causes, api.StatusCause{Type: reason})
	return err
}
