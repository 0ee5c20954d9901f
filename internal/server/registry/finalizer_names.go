package registry

import (
	"strconv"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// validateFinalizerNames checks that each finalizer is a qualified name
// ("example.com/cleanup"), as kube's ValidateFinalizers does on every
// write (ValidateFinalizerName: content.IsQualifiedName); one that is not a
// string is refused as validateMeta refuses a finalizers value that is not
// a list.
func validateFinalizerNames(obj api.Object) []api.StatusCause {
	var causes []api.StatusCause
	for _, f := range finalizers(obj) {
		name, ok := f.(string)
		if !ok {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.finalizers", "Invalid value: must be a list of strings"))
			continue
		}
		for _, msg := range resource.QualifiedName(name) {
			causes = append(causes, apierror.Field(api.CauseTypeFieldValueInvalid, "metadata.finalizers", "Invalid value: "+strconv.Quote(name)+": "+msg))
		}
	}
	return causes
}
