package server

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
)

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

// boolParam reads a boolean query parameter as kube-apiserver's parameter
// codec does (runtime.Convert_Slice_string_To_bool): absent, "0" and
// "false" (any case) are false, any other value, "" too, is true.
func boolParam(q url.Values, name string) bool {
	v, ok := q[name]
	return ok && (len(v) == 0 || (v[0] != "0" && !strings.EqualFold(v[0], "false")))
}

// maxTimeoutSeconds is the longest timeoutSeconds a Duration holds
// (292 years); a longer one is served as it, where kube-apiserver's
// multiplication by time.Second would overflow.
const maxTimeoutSeconds = int64(math.MaxInt64 / time.Second)

// timeoutSeconds reads ?timeoutSeconds: 0 when absent; 400 unless a
// non-negative integer.
func timeoutSeconds(q url.Values) (time.Duration, error) {
	param := q.Get("timeoutSeconds")
	if param == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(param, 10, 64)
	if err != nil || n < 0 {
		return 0, apierror.BadRequest(fmt.Sprintf("invalid timeoutSeconds %q: must be a non-negative integer", param))
	}
	return time.Duration(min(n, maxTimeoutSeconds)) * time.Second, nil
}

// parseListOptions reads and validates a list's query parameters as
// kube-apiserver does (validation.go ValidateListOptions).
func parseListOptions(q url.Values, res *resource.Resource) (registry.ListOptions, error) {
	var opts registry.ListOptions
	rv, match, cont := q.Get("resourceVersion"), q.Get("resourceVersionMatch"), q.Get("continue")
	n, err := registry.ParseResourceVersion(rv)
	if err != nil {
		return opts, apierror.BadRequest(err.Error())
	}
	if err := validateMatch(rv, match, cont, q.Get("sendInitialEvents")); err != nil {
		return opts, err
	}
	opts.ResourceVersion, opts.Continue = n, cont
	if _, err := timeoutSeconds(q); err != nil {
		return opts, err
	}
	if l := q.Get("limit"); l != "" {
		if opts.Limit, err = strconv.ParseInt(l, 10, 64); err != nil || opts.Limit < 0 {
			return opts, apierror.BadRequest(fmt.Sprintf("invalid limit %q: must be a non-negative integer", l))
		}
	}
	if rv == "0" {
		opts.Limit = 0 // served from "any" state: kube ignores the limit
	}
	opts.Exact = match == "Exact" || (match == "" && n > 0 && opts.Limit > 0)
	if opts.Labels, err = selector.ParseLabels(q.Get("labelSelector")); err != nil {
		return opts, apierror.BadRequest(fmt.Sprintf("unable to parse requirement: %v", err))
	}
	if opts.Fields, err = selector.ParseFields(q.Get("fieldSelector")); err != nil {
		return opts, apierror.BadRequest(fmt.Sprintf("invalid field selector: %v", err))
	}
	return opts, registry.ValidateFields(res, opts.Fields)
}

// validateMatch applies kube's rules on resourceVersionMatch and continue.
func validateMatch(rv, match, cont, sendInitialEvents string) error {
	invalid := func(field, msg string) error {
		return apierror.Invalid("meta.k8s.io", "ListOptions", "", []api.StatusCause{apierror.Field(api.CauseTypeFieldValueForbidden, field, msg)})
	}
	switch {
	case cont != "" && rv != "" && rv != "0":
		return apierror.BadRequest("specifying resource version is not allowed when using continue")
	case match != "" && rv == "":
		return invalid("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden unless resourceVersion is provided")
	case match != "" && cont != "":
		return invalid("resourceVersionMatch", "Forbidden: resourceVersionMatch is forbidden when continue is provided")
	case match == "Exact" && rv == "0":
		return invalid("resourceVersionMatch", "Forbidden: resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"")
	case match != "" && match != "Exact" && match != "NotOlderThan":
		return apierror.Invalid("meta.k8s.io", "ListOptions", "", []api.StatusCause{apierror.Field(api.CauseTypeFieldValueNotSupported, "resourceVersionMatch", fmt.Sprintf("Unsupported value: %q: supported values: \"Exact\", \"NotOlderThan\"", match))})
	case sendInitialEvents != "":
		return invalid("sendInitialEvents", "Forbidden: sendInitialEvents is forbidden for list")
	}
	return nil
}
