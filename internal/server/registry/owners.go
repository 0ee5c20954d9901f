package registry

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// validateOwnerReferences checks metadata.ownerReferences as kube's
// ValidateOwnerReferences (apimachinery's api/validation/objectmeta.go)
// does on every write: each reference names its owner's apiVersion, kind,
// name and uid; no core Event owns anything (kube's BannedOwners); at most
// one reference is the controller. The garbage collector and every
// controller's adoption logic rely on these.
func validateOwnerReferences(obj api.Object) []api.StatusCause {
	v, ok := obj.Metadata()["ownerReferences"]
	if !ok || v == nil {
		return nil
	}
	const field = "metadata.ownerReferences"
	var refs []api.OwnerReference
	if b, err := json.Marshal(v); err != nil || json.Unmarshal(b, &refs) != nil {
		return []api.StatusCause{apierror.Field(api.CauseTypeFieldValueInvalid, field, "Invalid value: must be a list of owner references")}
	}
	var causes []api.StatusCause
	controller := "" // kind/name of the first controller reference
	value := ""      // refs in JSON, cut as the answer cuts a cause, made once
	for i, ref := range refs {
		if len(causes) >= apierror.MaxCauses {
			break // the answer keeps no more
		}
		at := fmt.Sprintf("%s[%d]", field, i)
		group, version, parsed := splitAPIVersion(ref.APIVersion)
		if ref.APIVersion == "" {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueRequired, at+".apiVersion", "Required value: must not be empty"))
		} else if !parsed || version == "" {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, at+".apiVersion",
				"Invalid value: "+strconv.Quote(ref.APIVersion)+": must be <group>/<version> or <version>"))
		}
		for _, f := range []struct{ name, value string }{{"kind", ref.Kind}, {"name", ref.Name}, {"uid", ref.UID}} {
			if f.value == "" {
				causes = append(causes, apierror.Field(api.CauseTypeFieldValueRequired, at+"."+f.name, "Required value: must not be empty"))
			}
		}
		if group == "" && version == "v1" && ref.Kind == "Event" {
			b, _ := json.Marshal(ref)
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, at,
				fmt.Sprintf("Invalid value: %s: /v1, Kind=Event is disallowed from being an owner", b)))
		}
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		if controller == "" {
			controller = ref.Kind + "/" + ref.Name
			continue
		}
		if value == "" {
			// kube repeats every reference in each such cause: quadratic
			// in their number, gigabytes for a body of a few megabytes.
			b, _ := json.Marshal(refs)
			value = apierror.Truncate(string(b), apierror.MaxCauseRunes)
		}
		causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, field,
			fmt.Sprintf("Invalid value: %s: Only one reference can have Controller set to true. Found \"true\" in references for %s and %s", value, controller, ref.Kind+"/"+ref.Name)))
	}
	return causes
}

// splitAPIVersion splits "group/version" or "version" as kube's
// schema.ParseGroupVersion; parsed is false for more than one slash.
func splitAPIVersion(apiVersion string) (group, version string, parsed bool) {
	switch strings.Count(apiVersion, "/") {
	case 0:
		return "", apiVersion, true
	case 1:
		group, version, _ = strings.Cut(apiVersion, "/")
		return group, version, true
	}
	return "", "", false
}
