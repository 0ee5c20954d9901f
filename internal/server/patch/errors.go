package patch

import (
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
)

// badRequest is 400 for a malformed patch.
func badRequest(format string, args ...any) *api.StatusError {
	return apierror.BadRequest(fmt.Sprintf(format, args...))
}

// invalid is kube's 422 for a patch that does not apply.
func invalid(format string, args ...any) *api.StatusError {
	e := apierror.BadRequest(fmt.Sprintf(format, args...))
	e.Status.Code = http.StatusUnprocessableEntity
	e.Status.Reason = api.StatusReasonInvalid
	return e
}

// panicked is kube-apiserver's 500 for a request that panicked.
func panicked() *api.StatusError {
	e := apierror.BadRequest("This request caused apiserver to panic. Look in the logs for details.")
	e.Status.Code = http.StatusInternalServerError
	e.Status.Reason = api.StatusReasonInternalError
	return e
}
