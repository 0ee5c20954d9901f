package registry

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// validateFinalizers checks the finalizers as kube's ValidateFinalizers
// does on every write, after the ownerReferences: each is a qualified name
// ("example.com/cleanup", ValidateFinalizerName: content.IsQualifiedName),
// and then orphan and foregroundDeletion, which ask the garbage collector
// for opposite things, are not both set. One that is not a string is
// refused as validateMeta refuses a finalizers value that is not a list.
func validateFinalizers(obj api.Object) []api.StatusCause {
	var causes []api.StatusCause
	for _, f := range finalizers(obj) {
		if len(causes) >= apierror.MaxCauses {
			break // the answer keeps no more; a body holds 750,000 bad names
		}
		name, ok := f.(string)
		if !ok {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.finalizers", "Invalid value: must be a list of strings"))
			continue
		}
		for _, msg := range resource.QualifiedName(name) {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.finalizers", "Invalid value: "+strconv.Quote(name)+": "+msg))
		}
	}
	if fins := finalizers(obj); slices.Contains(fins, any(OrphanFinalizer)) && slices.Contains(fins, any(ForegroundFinalizer)) {
		causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.finalizers",
			fmt.Sprintf("Invalid value: %s: finalizer %s and %s cannot be both set", jsonValue(fins), OrphanFinalizer, ForegroundFinalizer)))
	}
	return causes
}
