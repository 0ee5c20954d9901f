// Package apierror builds the Kubernetes Status errors the server returns,
// with kube-apiserver's codes, reasons, messages and details, and translates
// storage errors into them in one place.
package apierror

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/storage"
)

// Target names the object an error is about: its group, resource (plural)
// and name, as Status details carry them.
type Target struct {
	Group, Resource, Name string
}

func (t Target) qualified() string { return qualify(t.Resource, t.Group) }

// qualify is "name.group", or name in the core group, as kube's
// GroupResource and GroupKind print.
func qualify(name, group string) string {
	if group == "" {
		return name
	}
	return name + "." + group
}

func newErr(code int32, reason api.StatusReason, msg string, t *Target) *api.StatusError {
	s := api.NewStatus(code, reason, Truncate(msg, MaxWarningRunes))
	if t != nil {
		s.Details = &api.StatusDetails{Name: Truncate(t.Name, MaxItemRunes), Group: t.Group, Kind: t.Resource}
	}
	return &api.StatusError{Status: s}
}

// NotFound is 404: `configmaps "x" not found`.
func NotFound(t Target) *api.StatusError {
	return newErr(http.StatusNotFound, api.StatusReasonNotFound, fmt.Sprintf("%s %s not found", t.qualified(), Quote(t.Name)), &t)
}

// AlreadyExists is 409: `configmaps "x" already exists`.
func AlreadyExists(t Target) *api.StatusError {
	return newErr(http.StatusConflict, api.StatusReasonAlreadyExists, fmt.Sprintf("%s %s already exists", t.qualified(), Quote(t.Name)), &t)
}

// Conflict is 409 with kube's optimistic-lock message when msg is empty.
func Conflict(t Target, msg string) *api.StatusError {
	if msg == "" {
		msg = "the object has been modified; please apply your changes to the latest version and try again"
	}
	return newErr(http.StatusConflict, api.StatusReasonConflict, fmt.Sprintf("Operation cannot be fulfilled on %s %s: %s", t.qualified(), Quote(t.Name), msg), &t)
}

// Invalid is 422 with causes naming the fields: `ConfigMap "x" is invalid: [...]`,
// the kind qualified by a group when it has one (`Lease.coordination.k8s.io "x"`).
func Invalid(group, kind, name string, causes []api.StatusCause) *api.StatusError {
	causes = slices.Clone(causes[:min(len(causes), MaxCauses)])
	msgs := make([]string, len(causes))
	for i, c := range causes {
		c.Field, c.Message = Truncate(c.Field, MaxItemRunes), Truncate(c.Message, MaxCauseRunes)
		causes[i] = c
		msgs[i] = c.Message
		if c.Field != "" {
			msgs[i] = c.Field + ": " + c.Message
		}
	}
	joined := strings.Join(msgs, ", ")
	if len(msgs) > 1 {
		joined = "[" + joined + "]"
	}
	e := newErr(http.StatusUnprocessableEntity, api.StatusReasonInvalid, fmt.Sprintf("%s %s is invalid: %s", qualify(kind, group), Quote(name), joined), nil)
	e.Status.Details = &api.StatusDetails{Name: Truncate(name, MaxItemRunes), Group: group, Kind: kind, Causes: causes}
	return e
}

// Field is one invalid-field cause.
func Field(typ api.CauseType, field, msg string) api.StatusCause {
	return api.StatusCause{Type: typ, Field: field, Message: msg}
}

// BadRequest is 400.
func BadRequest(msg string) *api.StatusError {
	return newErr(http.StatusBadRequest, api.StatusReasonBadRequest, msg, nil)
}

// Expired is 410 with reason Expired.
func Expired(msg string) *api.StatusError {
	return newErr(http.StatusGone, api.StatusReasonExpired, msg, nil)
}

// MethodNotAllowed is 405.
func MethodNotAllowed(method, what string) *api.StatusError {
	return newErr(http.StatusMethodNotAllowed, api.StatusReasonMethodNotAllowed, fmt.Sprintf("%s is not supported on %s", method, what), nil)
}

// NotAcceptable is 406.
func NotAcceptable(accepted []string) *api.StatusError {
	return newErr(http.StatusNotAcceptable, api.StatusReasonNotAcceptable, "only the following media types are accepted: "+strings.Join(accepted, ", "), nil)
}

// NotAcceptableForm is 406 for an answer the negotiated form does not fit
// (kube's errNotAcceptable): message says why.
func NotAcceptableForm(message string) *api.StatusError {
	return newErr(http.StatusNotAcceptable, api.StatusReasonNotAcceptable, message, nil)
}

// UnsupportedMediaType is 415, with kube-apiserver's message.
func UnsupportedMediaType(accepted []string) *api.StatusError {
	return newErr(http.StatusUnsupportedMediaType, api.StatusReasonUnsupportedMediaType,
		"the body of the request was in an unknown format - accepted media types include: "+strings.Join(accepted, ", "), nil)
}

// TooLarge is 413 for a body over limit bytes.
func TooLarge(limit int64) *api.StatusError {
	return EntityTooLarge(fmt.Sprintf("the request body exceeds the limit of %d bytes", limit))
}

// EntityTooLarge is 413.
func EntityTooLarge(msg string) *api.StatusError {
	return newErr(http.StatusRequestEntityTooLarge, api.StatusReasonRequestEntityTooLarge, msg, nil)
}

// Forbidden is 403 for a request refused whoever makes it.
func Forbidden(msg string) *api.StatusError {
	return newErr(http.StatusForbidden, api.StatusReasonForbidden, msg, nil)
}

// ForbiddenTo is kube's 403 for a request its user may not make
// (NewForbidden): `configmaps "x" is forbidden: <why>`, "forbidden: <why>"
// for a non-resource path (t's Resource empty).
func ForbiddenTo(t Target, why string) *api.StatusError {
	switch {
	case t.Resource == "":
		return newErr(http.StatusForbidden, api.StatusReasonForbidden, "forbidden: "+why, &t)
	case t.Name == "":
		return newErr(http.StatusForbidden, api.StatusReasonForbidden, t.qualified()+" is forbidden: "+why, &t)
	}
	return newErr(http.StatusForbidden, api.StatusReasonForbidden, fmt.Sprintf("%s %s is forbidden: %s", t.qualified(), Quote(t.Name), why), &t)
}

// TooManyRequests is 429 with a retry delay in seconds.
func TooManyRequests(msg string, retryAfter int32) *api.StatusError {
	e := newErr(http.StatusTooManyRequests, api.StatusReasonTooManyRequests, msg, nil)
	e.Status.Details = &api.StatusDetails{RetryAfterSeconds: retryAfter}
	return e
}

// Internal is 500 for a real fault.
func Internal(err error) *api.StatusError {
	return newErr(http.StatusInternalServerError, api.StatusReasonInternalError, "Internal error occurred: "+err.Error(), nil)
}

// OtherName is kube's checkName's refusal of an object named objName (""
// for none) written to the URL of name.
func OtherName(objName, name string) *api.StatusError {
	if objName == "" {
		return BadRequest(fmt.Sprintf("the name of the object (%s based on URL) was undeterminable: name must be provided", name))
	}
	return BadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", objName, name))
}

// Unconverted is kube's answer to an error that is not a Status, which
// its handler turns into a 500 with no reason and the error's message
// (responsewriters.ErrorToAPIStatus); what kube answers so, we answer so.
func Unconverted(msg string) *api.StatusError {
	return &api.StatusError{Status: api.NewStatus(http.StatusInternalServerError, "", msg)}
}

// Timeout is 504.
func Timeout(msg string, retryAfter int32) *api.StatusError {
	e := newErr(http.StatusGatewayTimeout, api.StatusReasonTimeout, msg, nil)
	e.Status.Details = &api.StatusDetails{RetryAfterSeconds: retryAfter}
	return e
}

// Unauthorized is 401.
func Unauthorized() *api.StatusError {
	return newErr(http.StatusUnauthorized, api.StatusReasonUnauthorized, "Unauthorized", nil)
}

// FromStorage translates an error of the storage layer about target into a
// Status error. Errors it does not know become 500.
func FromStorage(err error, t Target) *api.StatusError {
	var se *api.StatusError
	switch {
	case errors.As(err, &se):
		return se
	case errors.Is(err, storage.ErrNotFound):
		return NotFound(t)
	case errors.Is(err, storage.ErrKeyExists):
		return AlreadyExists(t)
	case errors.Is(err, storage.ErrConflict):
		return Conflict(t, "")
	case errors.Is(err, storage.ErrCompacted):
		return Expired("The resourceVersion for the provided list is too old.")
	case errors.Is(err, storage.ErrFutureRevision):
		return Timeout("Too large resource version", 1)
	case errors.Is(err, storage.ErrValueTooLarge):
		return TooLarge(storage.MaxValueSize)
	case errors.Is(err, storage.ErrInvalidArgument):
		return BadRequest(err.Error())
	}
	return Internal(err)
}

// From returns err as a Status error, 500 unless it already is one.
func From(err error) *api.StatusError {
	var se *api.StatusError
	if errors.As(err, &se) {
		return se
	}
	return Internal(err)
}
