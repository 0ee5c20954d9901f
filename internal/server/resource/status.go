package resource

import (
	"maps"

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

// StatusWrite is what a write of next through the status subresource
// makes of the stored object cur: cur with next's status and
// resourceVersion (a precondition when set), and next's metadata but for
// the fields StatusKeeps names (all of them when nil). The spec never
// changes, as kube's status strategies keep it.
func (r *Resource) StatusWrite(cur, next api.Object) api.Object {
	out := cur.DeepCopy()
	out["status"] = next["status"]
	if r.StatusKeeps != nil {
		md, stored := maps.Clone(next.Metadata()), cur.Metadata()
		for _, f := range r.StatusKeeps {
			if v, ok := stored[f]; ok {
				md[f] = v
			} else {
				delete(md, f)
			}
		}
		out["metadata"] = map[string]any(api.Object(md).DeepCopy())
	}
	out.SetMeta("resourceVersion", next.ResourceVersion())
	return out
}
