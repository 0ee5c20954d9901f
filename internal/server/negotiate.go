package server

import (
	"mime"
	"strings"
)

// Media types the server reads and writes.
const (
	mediaJSON     = "application/json"
	mediaYAML     = "application/yaml"
	mediaProtobuf = "application/vnd.kubernetes.protobuf"

	mediaJSONPatch      = "application/json-patch+json"
	mediaMergePatch     = "application/merge-patch+json"
	mediaStrategicPatch = "application/strategic-merge-patch+json"
	mediaApplyPatchYAML = "application/apply-patch+yaml"

	// mediaDiscoveryV2 is what aggregated discovery answers with; clients
	// recognise the v2 form by this Content-Type only.
	mediaDiscoveryV2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
)

// output is the form a response takes.
type output struct {
	mediaType string // mediaJSON, mediaYAML or mediaProtobuf
	// as is "" for the object itself, or "Table", "PartialObjectMetadata",
	// "PartialObjectMetadataList", "APIGroupDiscoveryList".
	as string
	// asGV is the apiVersion of the as form ("meta.k8s.io/v1"), "" without one.
	asGV string
}

// mediaRange is one entry of an Accept header.
type mediaRange struct {
	typ    string
	params map[string]string
}

// parseAccept splits an Accept header into media ranges, in the client's
// order of preference (kube clients order them; q values are rare and ignored).
func parseAccept(header string) []mediaRange {
	if strings.TrimSpace(header) == "" {
		return []mediaRange{{typ: "*/*"}}
	}
	var out []mediaRange
	for part := range strings.SplitSeq(header, ",") {
		typ, params, err := mime.ParseMediaType(strings.TrimSpace(part))
		if err != nil {
			continue
		}
		out = append(out, mediaRange{typ: typ, params: params})
	}
	return out
}

// negotiate picks the first acceptable output among the header's ranges.
// protobuf says whether the object can be encoded as protobuf; asOK says
// which "as=" forms the endpoint offers (Table and the metadata-only forms
// for resources, the discovery list for /api and /apis).
func negotiate(header string, protobuf bool, asOK func(as, group, version string) bool) (output, bool) {
	for _, r := range parseAccept(header) {
		out := output{as: r.params["as"]}
		if out.as != "" {
			if !asOK(out.as, r.params["g"], r.params["v"]) {
				continue
			}
			out.asGV = r.params["g"] + "/" + r.params["v"]
		}
		switch r.typ {
		case mediaJSON, "application/*", "*/*":
			out.mediaType = mediaJSON
			return out, true
		case mediaYAML:
			out.mediaType = mediaYAML
			return out, true
		case mediaProtobuf:
			// The metadata-only forms are meta.k8s.io kinds, which every
			// resource can answer in protobuf.
			if protobuf && out.as == "" || out.partial() {
				out.mediaType = mediaProtobuf
				return out, true
			}
		}
	}
	return output{}, false
}
