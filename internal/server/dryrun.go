package server

import (
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// withDryRun reads a write's dryRun parameter: "All" runs the whole request
// (defaulting, validation, conflicts) without storing anything, as kube's
// server-side dry run; any other value is 422.
func withDryRun(r *http.Request) (*http.Request, error) {
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		return r, nil
	}
	values := r.URL.Query()["dryRun"]
	for _, v := range values {
		if v != "All" {
			return nil, apierror.Invalid("meta.k8s.io", "CreateOptions", "", []api.StatusCause{
				apierror.Field(api.CauseTypeFieldValueNotSupported, "dryRun", fmt.Sprintf("Unsupported value: %q: supported values: \"All\"", v)),
			})
		}
	}
	if len(values) == 0 {
		return r, nil
	}
	return r.WithContext(registry.WithDryRun(r.Context())), nil
}
