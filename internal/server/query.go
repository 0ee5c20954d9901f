package server

import (
	"fmt"
	"net/url"
	"strconv"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/selector"
)

func formatRV(rev int64) string { return strconv.FormatInt(rev, 10) }

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
