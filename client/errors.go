package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// Errors from the server are *api.StatusError: the Status body the server
// sent, or, when the body is not a Status (a proxy's page, the plain-text
// 429 of kube-apiserver's priority and fairness), a Status made from the
// HTTP code and the body, as client-go makes one. The Is* helpers below
// look through wrapping with errors.As.

// ErrMetadataOnly is the error of a Create or an Update through a
// Resource[*api.PartialObjectMetadata]: it would write an object without
// its contents.
var ErrMetadataOnly = errors.New("a metadata-only resource cannot create or update objects; use a patch")

// maxBodyInMessage bounds how much of a non-Status body an error quotes.
const maxBodyInMessage = 1024

// statusError decodes the body of a non-2xx response into a StatusError.
func statusError(code int, header http.Header, body []byte) *api.StatusError {
	var st api.Status
	decoded := false
	if isProtobuf(header.Get("Content-Type")) {
		st, decoded = decodeProtoStatus(body)
	} else {
		decoded = json.Unmarshal(body, &st) == nil && st.Kind == "Status"
	}
	if decoded && st.Status == api.StatusFailure {
		if st.Code == 0 {
			st.Code = int32(code)
		}
		addRetryAfter(&st, header)
		return &api.StatusError{Status: st}
	}
	st = api.NewStatus(int32(code), reasonForCode(code), unstructuredMessage(code, body))
	addRetryAfter(&st, header)
	return &api.StatusError{Status: st}
}

// unstructuredMessage says what the server answered when it gave no Status.
func unstructuredMessage(code int, body []byte) string {
	text := strings.TrimSpace(string(body))
	if len(text) > maxBodyInMessage {
		text = text[:maxBodyInMessage] + "..."
	}
	if text == "" {
		return fmt.Sprintf("the server responded with the status code %d but did not return more information", code)
	}
	return fmt.Sprintf("the server responded with the status code %d: %s", code, text)
}

// addRetryAfter records a Retry-After header in the Status details, as
// client-go does, unless the Status already says how long to wait.
func addRetryAfter(st *api.Status, header http.Header) {
	secs, ok := retryAfterHeader(header)
	if !ok || (st.Details != nil && st.Details.RetryAfterSeconds > 0) {
		return
	}
	if st.Details == nil {
		st.Details = &api.StatusDetails{}
	}
	st.Details.RetryAfterSeconds = int32(secs)
}

// retryAfterHeader reads Retry-After in seconds (the only form Kubernetes
// servers send).
func retryAfterHeader(header http.Header) (int, bool) {
	s := header.Get("Retry-After")
	if s == "" {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, true
}

// codeReasons maps HTTP codes to the reason kube-apiserver gives them.
var codeReasons = map[int]api.StatusReason{
	http.StatusBadRequest:            api.StatusReasonBadRequest,
	http.StatusUnauthorized:          api.StatusReasonUnauthorized,
	http.StatusForbidden:             api.StatusReasonForbidden,
	http.StatusNotFound:              api.StatusReasonNotFound,
	http.StatusMethodNotAllowed:      api.StatusReasonMethodNotAllowed,
	http.StatusNotAcceptable:         api.StatusReasonNotAcceptable,
	http.StatusConflict:              api.StatusReasonConflict,
	http.StatusGone:                  api.StatusReasonGone,
	http.StatusRequestEntityTooLarge: api.StatusReasonRequestEntityTooLarge,
	http.StatusUnsupportedMediaType:  api.StatusReasonUnsupportedMediaType,
	http.StatusUnprocessableEntity:   api.StatusReasonInvalid,
	http.StatusTooManyRequests:       api.StatusReasonTooManyRequests,
	http.StatusInternalServerError:   api.StatusReasonInternalError,
	http.StatusServiceUnavailable:    api.StatusReasonServiceUnavailable,
	http.StatusGatewayTimeout:        api.StatusReasonTimeout,
}

func reasonForCode(code int) api.StatusReason { return codeReasons[code] }

// status returns the Status carried by err, if any.
func status(err error) (api.Status, bool) {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return api.Status{}, false
	}
	return se.Status, true
}

// hasReason reports whether err is a Status with the reason, or with the
// code and a reason this client does not know (as client-go decides).
func hasReason(err error, reason api.StatusReason, code int) bool {
	st, ok := status(err)
	if !ok {
		return false
	}
	if st.Reason == reason {
		return true
	}
	return int(st.Code) == code && !knownReasons[st.Reason]
}

// knownReasons are the reasons of api; a Status with another reason is
// judged by its code.
var knownReasons = map[api.StatusReason]bool{
	api.StatusReasonUnauthorized: true, api.StatusReasonForbidden: true, api.StatusReasonNotFound: true,
	api.StatusReasonAlreadyExists: true, api.StatusReasonConflict: true, api.StatusReasonGone: true,
	api.StatusReasonInvalid: true, api.StatusReasonTimeout: true, api.StatusReasonTooManyRequests: true,
	api.StatusReasonBadRequest: true, api.StatusReasonMethodNotAllowed: true, api.StatusReasonNotAcceptable: true,
	api.StatusReasonRequestEntityTooLarge: true, api.StatusReasonUnsupportedMediaType: true,
	api.StatusReasonInternalError: true, api.StatusReasonExpired: true, api.StatusReasonServiceUnavailable: true,
}

// IsNotFound reports a 404 NotFound.
func IsNotFound(err error) bool { return hasReason(err, api.StatusReasonNotFound, http.StatusNotFound) }

// IsAlreadyExists reports a create of a name that exists (409 AlreadyExists).
func IsAlreadyExists(err error) bool {
	return hasReason(err, api.StatusReasonAlreadyExists, http.StatusConflict)
}

// IsConflict reports a write that lost an optimistic-concurrency race or
// failed a precondition (409 Conflict).
func IsConflict(err error) bool { return hasReason(err, api.StatusReasonConflict, http.StatusConflict) }

// IsInvalid reports a rejected object (422 Invalid).
func IsInvalid(err error) bool {
	return hasReason(err, api.StatusReasonInvalid, http.StatusUnprocessableEntity)
}

// IsForbidden reports a 403 Forbidden.
func IsForbidden(err error) bool {
	return hasReason(err, api.StatusReasonForbidden, http.StatusForbidden)
}

// IsUnauthorized reports a 401 Unauthorized.
func IsUnauthorized(err error) bool {
	return hasReason(err, api.StatusReasonUnauthorized, http.StatusUnauthorized)
}

// IsTooManyRequests reports a 429; RetryAfter says how long the server asked
// the client to wait.
func IsTooManyRequests(err error) bool {
	return hasReason(err, api.StatusReasonTooManyRequests, http.StatusTooManyRequests)
}

// IsExpired reports a resourceVersion or continue token the server no
// longer holds: reason Expired or Gone, or code 410. A reflector relists on
// it (client-go's isExpiredError accepts both reasons).
func IsExpired(err error) bool {
	return hasReason(err, api.StatusReasonExpired, http.StatusGone) ||
		hasReason(err, api.StatusReasonGone, http.StatusGone)
}

// IsGone is IsExpired, under the name of the HTTP code.
func IsGone(err error) bool { return IsExpired(err) }

// RetryAfter returns how long the server asked the client to wait before
// retrying (Status details.retryAfterSeconds, filled from the Retry-After
// header when the body had none).
func RetryAfter(err error) (time.Duration, bool) {
	st, ok := status(err)
	if !ok || st.Details == nil || st.Details.RetryAfterSeconds <= 0 {
		return 0, false
	}
	return time.Duration(st.Details.RetryAfterSeconds) * time.Second, true
}
