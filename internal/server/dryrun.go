package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// withDryRun reads a write's dryRun parameter: "All" runs the whole request
// (defaulting, validation, conflicts) without storing anything, as kube's
// server-side dry run; any other value is 422, as the verb's options'
// validation (ValidateCreateOptions, ...) answers it.
func withDryRun(r *http.Request) (*http.Request, error) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return r, nil
	}
	values := r.URL.Query()["dryRun"]
	if c, bad := dryRunCause(values); bad {
		return nil, apierror.Invalid("meta.k8s.io", optionsKind[r.Method], "", []api.StatusCause{c})
	}
	if len(values) == 0 {
		return r, nil
	}
	return r.WithContext(registry.WithDryRun(r.Context())), nil
}

// optionsKind is the kind of the options each write method's query holds.
var optionsKind = map[string]string{
	http.MethodPost: "CreateOptions", http.MethodPut: "UpdateOptions",
	http.MethodPatch: "PatchOptions", http.MethodDelete: "DeleteOptions",
}

// dryRunCause is the cause kube's ValidateDryRun gives unless every value
// is "All" (field.Error prints the list as JSON), and whether there is one.
func dryRunCause(values []string) (api.StatusCause, bool) {
	if !slices.ContainsFunc(values, func(v string) bool { return v != "All" }) {
		return api.StatusCause{}, false
	}
	list, _ := json.Marshal(values)
	return apierror.Field(api.CauseTypeFieldValueNotSupported, "dryRun", fmt.Sprintf(`Unsupported value: %s: supported values: "All"`, list)), true
}
