package resource

import (
	"encoding/json"
	"maps"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// statusMetadataKept are, by built-in resource, the metadata fields kube's
// status strategy (its PrepareForUpdate) keeps from the stored object on a
// write through the status subresource, the rest of metadata coming from
// the request; a resource not listed keeps none. Listed with nil, it keeps
// all the stored metadata (ResetObjectMetaForStatus or the stored
// ObjectMeta), as custom resources do. The definitions' own status
// strategy means to reset metadata but resets it to the request's.
var statusMetadataKept = map[GVR][]string{
	{"", "v1", "pods"}:                              {"ownerReferences"},
	{"apps", "v1", "deployments"}:                   {"labels"},
	{"apiregistration.k8s.io", "v1", "apiservices"}: {"labels", "annotations", "finalizers", "ownerReferences"},
	// v1's annotations carry what v2's spec and status hold that v1 has no
	// field for (prepareHPAv1): a v1 status write keeps all the stored
	// metadata, where kube would take its labels and finalizers.
	{"autoscaling", "v1", "horizontalpodautoscalers"}: nil,

	{"admissionregistration.k8s.io", "v1", "validatingadmissionpolicies"}: nil,
	{"certificates.k8s.io", "v1", "podcertificaterequests"}:               nil,
	{"flowcontrol.apiserver.k8s.io", "v1", "flowschemas"}:                 nil,
	{"flowcontrol.apiserver.k8s.io", "v1", "prioritylevelconfigurations"}: nil,
	{"networking.k8s.io", "v1", "servicecidrs"}:                           nil,
	{"resource.k8s.io", "v1", "devicetaintrules"}:                         nil,
	{"resource.k8s.io", "v1", "resourceclaims"}:                           nil,
	{"storage.k8s.io", "v1", "csinodes"}:                                  nil,
	{"storage.k8s.io", "v1", "volumeattachments"}:                         nil,
	{"storagemigration.k8s.io", "v1", "storageversionmigrations"}:         nil,
}

// statusKeeps sets r.StatusKeeps for a built-in kind with a status
// subresource, from statusMetadataKept.
func statusKeeps(r *Resource) {
	if !r.StatusSubresource {
		return
	}
	keeps, listed := statusMetadataKept[gvrOf(r)]
	if !listed {
		keeps = []string{}
	}
	r.StatusKeeps = keeps
}

// statusKeptFromStored are, by built-in resource, what kube's status
// strategy takes from the stored status into a written one that leaves
// it out.
var statusKeptFromStored = map[GVR]func(status, stored map[string]any){
	{"", "v1", "pods"}:              keepPodStatus,
	{"", "v1", "nodes"}:             keepNodeStatus,
	{"", "v1", "persistentvolumes"}: keepVolumeStatus,
}

// keepVolumeStatus is kube's persistent volume status strategy's
// lastPhaseTransitionTime: the stored one while the phase stays and the
// write sets none, now when the phase changes and the write sets none or
// the stored one.
func keepVolumeStatus(status, stored map[string]any) {
	const f = "lastPhaseTransitionTime"
	switch written := status[f]; {
	case status["phase"] == stored["phase"] && written == nil:
		if stored[f] != nil {
			status[f] = stored[f]
		}
	case status["phase"] != stored["phase"] && (written == nil || written == stored[f]):
		status[f] = api.NewTime(time.Now()).Format(time.RFC3339)
	}
}

// keepNodeStatus is what kube's node status strategy drops of a written
// status unless the stored one has it: the config, of the deprecated
// dynamic kubelet configuration. (It drops nodeInfo.runningInUserNamespace
// too while its gate, KubeletInUserNamespace, is off: on since 1.37.)
func keepNodeStatus(status, stored map[string]any) {
	if stored["config"] == nil {
		delete(status, "config")
	}
}

// keepPodStatus is what kube's pod status strategy keeps of the stored
// status: the QoS class (old kubelets dropped it), observedGenerations
// left at 0 (the status's, and each condition's from the stored
// conditions of its type, in order), and the resource claim statuses
// left out or null (an empty list clears them).
func keepPodStatus(status, stored map[string]any) {
	if s, _ := status["qosClass"].(string); s == "" && stored["qosClass"] != nil {
		status["qosClass"] = stored["qosClass"]
	}
	if zeroNumber(status["observedGeneration"]) && !zeroNumber(stored["observedGeneration"]) {
		status["observedGeneration"] = stored["observedGeneration"]
	}
	generations := map[any][]any{}
	for _, c := range asList(stored["conditions"]) {
		c, _ := c.(map[string]any)
		generations[c["type"]] = append(generations[c["type"]], c["observedGeneration"])
	}
	for _, c := range asList(status["conditions"]) {
		c, _ := c.(map[string]any)
		was := generations[c["type"]]
		if len(was) == 0 {
			continue
		}
		generations[c["type"]] = was[1:]
		if zeroNumber(c["observedGeneration"]) && !zeroNumber(was[0]) {
			c["observedGeneration"] = was[0]
		}
	}
	for _, f := range []string{"resourceClaimStatuses", "extendedResourceClaimStatus", "nodeAllocatableResourceClaimStatuses"} {
		if status[f] == nil && stored[f] != nil {
			status[f] = stored[f]
		}
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// zeroNumber says whether v, a JSON integer, is absent or 0.
func zeroNumber(v any) bool {
	switch n := v.(type) {
	case nil:
		return true
	case json.Number:
		return n == "0"
	case float64:
		return n == 0
	case int64:
		return n == 0
	case int:
		return n == 0
	}
	return false
}

// StatusWrite is what a write of next through the status subresource
// makes of the stored object cur: cur with next's status and
// resourceVersion (a precondition when set), and next's metadata but for
// the fields StatusKeeps names (all of them when nil). The spec never
// changes, as kube's status strategies keep it.
func (r *Resource) StatusWrite(cur, next api.Object) api.Object {
	out := cur.DeepCopy()
	out["status"] = next["status"]
	if keep := statusKeptFromStored[gvrOf(r)]; keep != nil {
		status, _ := out["status"].(map[string]any)
		if status == nil {
			status = map[string]any{}
			out["status"] = status
		}
		stored, _ := cur["status"].(map[string]any)
		keep(status, stored)
	}
	if r.StatusKeeps != nil {
		takeMetadata(out, next, r.StatusKeeps...)
	}
	out.SetMeta("resourceVersion", next.ResourceVersion())
	return out
}

// takeMetadata gives out, a copy of the stored object, the metadata of
// next, the object written, but for the fields keep, which stay as stored.
func takeMetadata(out, next api.Object, keep ...string) {
	md, stored := maps.Clone(next.Metadata()), out.Metadata()
	for _, f := range keep {
		if v, ok := stored[f]; ok {
			md[f] = v
		} else {
			delete(md, f)
		}
	}
	out["metadata"] = map[string]any(api.Object(md).DeepCopy())
}

// ResetFields are the paths of the fields a write through the
// subresource sub ("" for the resource itself) never owns in
// managedFields, as kube's strategies' GetResetFields name them: status
// for a resource with a status subresource (or its Reset); through
// status, spec and the metadata the status strategy keeps (custom
// resources' and v1 HPAs' keep all of it, yet theirs reset only spec); a
// part's own.
func (r *Resource) ResetFields(sub string) [][]string {
	if p, ok := r.Parts[sub]; ok && p.Reset != nil {
		return p.Reset
	}
	switch {
	case sub == "" && r.Reset != nil:
		return r.Reset
	case sub != "status" && r.StatusSubresource:
		return [][]string{{"status"}}
	case sub != "status":
		return nil
	}
	reset := [][]string{{"spec"}}
	switch {
	case r.Owner != "" || gvrOf(r) == GVR{"autoscaling", "v1", "horizontalpodautoscalers"}:
	case r.StatusKeeps == nil:
		reset = append(reset, []string{"metadata"})
	default:
		for _, f := range r.StatusKeeps {
			reset = append(reset, []string{"metadata", f})
		}
	}
	return reset
}

// WritePart is what a write of next through the subresource sub, status
// or one of Parts, makes of the stored object cur.
func (r *Resource) WritePart(sub string, cur, next api.Object) api.Object {
	if part, ok := r.Parts[sub]; ok {
		return part.Write(cur, next)
	}
	return r.StatusWrite(cur, next)
}
