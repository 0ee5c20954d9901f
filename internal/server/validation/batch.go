package validation

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // kube-apiserver embeds it for CronJobs' timeZone

	"github.com/robfig/cron/v3"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/selector"
	"github.com/listwatch/listwatch/internal/kubefmt"
)

// The bounds, labels and words of kube's batch validation.
const (
	maxIndexedParallelism       = 100_000
	maxFailedIndexes            = 100_000
	completionsSoftLimit        = 100_000
	highCompletionsParallelism  = 10_000
	highCompletionsFailedLimit  = 10_000
	maxPodFailurePolicyRules    = 20
	maxOnExitCodesValues        = 255
	maxOnPodConditionsPatterns  = 20
	maxSucceededIndexesLength   = 64 * 1024
	maxSuccessPolicyRules       = 20
	maxCronJobNameLength        = 52 // a DNS-1035 label less the 11 characters of a Job's suffix
	maxManagedByLength          = 63
	legacyJobNameLabel          = "job-name"
	legacyControllerUIDLabel    = "controller-uid"
	jobNameLabel                = "batch.kubernetes.io/job-name"
	controllerUIDLabel          = "batch.kubernetes.io/controller-uid"
	indexedCompletion           = "Indexed"
	nonIndexedCompletion        = "NonIndexed"
	failIndex                   = "FailIndex"
	podFailurePolicyNeedsNever  = `only "Never" is supported when podFailurePolicy is specified`
	restartPolicyOnFailureNever = `valid values: "OnFailure", "Never"`
)

// The values kube's batch validation accepts, sorted as its sets.List
// sorts them for its messages.
var (
	podFailurePolicyActions = []string{"Count", failIndex, "FailJob", "Ignore"}
	exitCodesOperators      = []string{"In", "NotIn"}
	conditionStatuses       = []string{"False", "True", "Unknown"}
	replacementPolicies     = []string{"Failed", "TerminatingOrFailed"}
	concurrencyPolicies     = []string{"Allow", "Forbid", "Replace"}
)

// job is the part of kube's ValidateJobCreate and ValidateJobUpdate that
// checks the new Job alone: the spec, and a name that leaves room for an
// Indexed Job's pod host names; invalid label values in the selector's
// expressions pass with storedInvalid (kube's
// AllowInvalidLabelValueInSelector, on update of a Job stored with one).
func job(o api.Object, storedInvalid bool) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	md := object(o, "metadata")
	p := path("spec")
	c.jobSpec(spec, p)
	raw, ok := spec["selector"].(map[string]any)
	if !ok {
		c.required(p.child("selector"), "")
	}
	ls := labelSelector(raw)
	c.labelSelectorAllowing(ls, p.child("selector"), storedInvalid)
	if sel, err := selector.FromLabelSelector(ls); err == nil {
		labels := stringMap(object(object(spec, "template"), "metadata"), "labels")
		if !sel.Matches(labels) {
			c.invalid(p.child("template", "metadata", "labels"), jsonValue{labels}, "`selector` does not match template `labels`")
		}
	}
	if completions, ok := integer(spec["completions"]); ok && completions > 0 && str(spec, "completionMode") == indexedCompletion {
		name := str(md, "name")
		host := name + "-" + strconv.FormatInt(completions-1, 10)
		if len(kubefmt.Util.DNS1123Label(host)) > 0 {
			c.invalid("metadata.name", name, "will not able to create pod with invalid DNS label: "+host)
		}
	}
	return c
}

// jobCreate is job and kube's validateGeneratedSelector, which
// ValidateJobCreate adds to it, as the create path sees a Job after its
// strategy's PrepareForCreate (with the batch.kubernetes.io labels
// required too): unless the selector is manual, the template carries the
// labels the strategy generated and the selector selects them.
func jobCreate(_ context.Context, o api.Object) []api.StatusCause {
	c := causes(job(o, false))
	spec := object(o, "spec")
	md := object(o, "metadata")
	c.generatedSelector(spec, str(md, "name"), str(md, "uid"))
	return c
}

func (c *causes) generatedSelector(spec map[string]any, name, uid string) {
	raw, ok := spec["selector"].(map[string]any)
	if spec["manualSelector"] == true || !ok {
		return
	}
	tp := path("spec.template.metadata")
	labels := stringMap(object(object(spec, "template"), "metadata"), "labels")
	expected := map[string]string{}
	for _, l := range [][2]string{{legacyControllerUIDLabel, uid}, {legacyJobNameLabel, name}, {controllerUIDLabel, uid}, {jobNameLabel, name}} {
		key, want := l[0], l[1]
		expected[key] = want
		got, found := labels[key]
		switch {
		case !found:
			c.required(tp.child("labels").key(key), "must be '"+want+"'")
		case got != want:
			c.invalid(tp.child("labels").key(key), jsonValue{labels}, "must be '"+want+"'")
		}
	}
	ls := labelSelector(raw)
	if sel, err := selector.FromLabelSelector(ls); err == nil && !sel.Matches(expected) {
		c.invalid("spec.selector", jsonValue{ls}, "`selector` not auto-generated")
	}
}

// labelSelector is apimachinery's ValidateLabelSelector.
func (c *causes) labelSelector(ls *selector.LabelSelector, p path) {
	c.labelSelectorAllowing(ls, p, false)
}

// labelSelectorAllowing is labelSelector, the expressions' values
// unchecked with invalidValues (AllowInvalidLabelValueInSelector).
func (c *causes) labelSelectorAllowing(ls *selector.LabelSelector, p path, invalidValues bool) {
	if ls == nil {
		return
	}
	c.labels(ls.MatchLabels, p.child("matchLabels"))
	for i, r := range ls.MatchExpressions {
		rp := p.child("matchExpressions").index(i)
		switch r.Operator {
		case "In", "NotIn":
			if len(r.Values) == 0 {
				c.required(rp.child("values"), "must be specified when `operator` is 'In' or 'NotIn'")
			}
		case "Exists", "DoesNotExist":
			if len(r.Values) > 0 {
				c.forbidden(rp.child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'")
			}
		default:
			c.invalid(rp.child("operator"), jsonValue{r.Operator}, "not a valid selector operator")
		}
		c.qualifiedName(rp.child("key"), r.Key)
		if invalidValues {
			continue
		}
		for j, v := range r.Values {
			for _, msg := range kubefmt.LabelValue(v) {
				c.invalid(rp.child("values").index(j), v, msg)
			}
		}
	}
}

// qualifiedName is ValidateQualifiedName (and ValidateLabelName).
func (c *causes) qualifiedName(p path, name string) {
	for _, msg := range kubefmt.LabelKey(name) {
		c.invalid(p, name, msg)
	}
}

// jobSpec is kube's validateJobSpec, the part of a Job's validation that
// a CronJob's jobTemplate shares, less the alpha spec.scheduling.
func (c *causes) jobSpec(spec map[string]any, p path) {
	for _, f := range []string{"parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished", "backoffLimitPerIndex", "maxFailedIndexes"} {
		c.nonNegative(p.child(f), spec[f])
	}
	parallelism, hasParallelism := integer(spec["parallelism"])
	completions, hasCompletions := integer(spec["completions"])
	perIndex, hasPerIndex := integer(spec["backoffLimitPerIndex"])
	maxFailed, hasMaxFailed := integer(spec["maxFailedIndexes"])
	if hasMaxFailed && !hasPerIndex {
		c.required(p.child("backoffLimitPerIndex"), "when maxFailedIndexes is specified")
	}
	if managedBy, ok := spec["managedBy"].(string); ok {
		c.domainPrefixedPath(p.child("managedBy"), managedBy)
		if len(managedBy) > maxManagedByLength {
			c.tooLong(p.child("managedBy"), maxManagedByLength)
		}
	}
	mode, hasMode := spec["completionMode"].(string)
	if hasMode && mode != nonIndexedCompletion && mode != indexedCompletion {
		c.notSupported(p.child("completionMode"), mode, nonIndexedCompletion, indexedCompletion)
	}
	if mode == indexedCompletion {
		if !hasCompletions {
			c.required(p.child("completions"), "when completion mode is Indexed")
		}
		if hasParallelism && parallelism > maxIndexedParallelism {
			c.invalid(p.child("parallelism"), parallelism, fmt.Sprintf("must be less than or equal to %d when completion mode is Indexed", maxIndexedParallelism))
		}
		if hasCompletions && hasMaxFailed && maxFailed > completions {
			c.invalid(p.child("maxFailedIndexes"), maxFailed, "must be less than or equal to completions")
		}
		if hasMaxFailed && maxFailed > maxFailedIndexes {
			c.invalid(p.child("maxFailedIndexes"), maxFailed, fmt.Sprintf("must be less than or equal to %d", maxFailedIndexes))
		}
		if hasCompletions && completions > completionsSoftLimit && hasPerIndex {
			high := fmt.Sprintf(" when completions are above %d and used with backoff limit per index", completionsSoftLimit)
			if !hasMaxFailed {
				c.required(p.child("maxFailedIndexes"), fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit))
			}
			if hasParallelism && parallelism > highCompletionsParallelism {
				c.invalid(p.child("parallelism"), parallelism, fmt.Sprintf("must be less than or equal to %d", highCompletionsParallelism)+high)
			}
			if hasMaxFailed && maxFailed > highCompletionsFailedLimit {
				c.invalid(p.child("maxFailedIndexes"), maxFailed, fmt.Sprintf("must be less than or equal to %d", highCompletionsFailedLimit)+high)
			}
		}
	}
	if !hasMode || mode == nonIndexedCompletion {
		if hasPerIndex {
			c.invalid(p.child("backoffLimitPerIndex"), perIndex, "requires indexed completion mode")
		}
		if hasMaxFailed {
			c.invalid(p.child("maxFailedIndexes"), maxFailed, "requires indexed completion mode")
		}
	}
	pfp, hasPolicy := spec["podFailurePolicy"].(map[string]any)
	if hasPolicy {
		c.podFailurePolicy(pfp, spec, p.child("podFailurePolicy"))
	}
	if sp, ok := spec["successPolicy"].(map[string]any); ok {
		if mode != indexedCompletion {
			c.invalid(p.child("successPolicy"), internalSuccessPolicy(sp), "requires indexed completion mode")
		} else if hasCompletions {
			c.successPolicy(sp, completions, p.child("successPolicy"))
		}
	}
	if rp, ok := spec["podReplacementPolicy"].(string); ok {
		switch {
		case hasPolicy && rp != "Failed":
			c.notSupported(p.child("podReplacementPolicy"), rp, "Failed")
		case !hasPolicy && !slices.Contains(replacementPolicies, rp):
			c.notSupported(p.child("podReplacementPolicy"), rp, replacementPolicies...)
		}
	}
	template := object(spec, "template")
	tp := p.child("template")
	c.podTemplateSpec(template, tp)
	switch rp := str(object(template, "spec"), "restartPolicy"); {
	case rp == "Always" || rp == "":
		c.required(tp.child("spec", "restartPolicy"), restartPolicyOnFailureNever)
	case rp != "OnFailure" && rp != "Never":
		c.notSupported(tp.child("spec", "restartPolicy"), rp, "OnFailure", "Never")
	case hasPolicy && rp != "Never":
		c.invalid(tp.child("spec", "restartPolicy"), jsonValue{rp}, podFailurePolicyNeedsNever)
	}
}

// httpPathFmt is what util/validation's IsDomainPrefixedPath lets follow
// the domain.
const httpPathFmt = `[A-Za-z0-9/\-._~%!$&'()*+,;=:]+`

var httpPathRE = regexp.MustCompile("^" + httpPathFmt + "$")

// domainPrefixedPath is util/validation's IsDomainPrefixedPath
// ("acme.io/foo").
func (c *causes) domainPrefixedPath(p path, s string) {
	if s == "" {
		c.required(p, "")
		return
	}
	host, rest, found := strings.Cut(s, "/")
	if !found || host == "" || rest == "" {
		c.invalid(p, s, `must be a domain-prefixed path (such as "acme.io/foo")`)
		return
	}
	for _, msg := range kubefmt.Util.DNS1123Subdomain(host) {
		c.invalid(p, host, msg)
	}
	if !httpPathRE.MatchString(rest) {
		c.invalid(p, rest, "Invalid path (regex used for validation is '"+httpPathFmt+"')")
	}
}

// validValues is how kube's batch messages list a set: Go's %q of a slice.
func validValues(vs []string) string { return fmt.Sprintf("valid values: %q", vs) }

// podFailurePolicy is kube's validatePodFailurePolicy.
func (c *causes) podFailurePolicy(pfp, spec map[string]any, p path) {
	rules := list(pfp, "rules")
	rp := p.child("rules")
	if len(rules) > maxPodFailurePolicyRules {
		c.tooMany(rp, len(rules), maxPodFailurePolicyRules)
	}
	containers := map[string]bool{}
	podSpec := object(object(spec, "template"), "spec")
	for _, group := range []string{"containers", "initContainers"} {
		for _, ctr := range list(podSpec, group) {
			ctr, _ := ctr.(map[string]any)
			containers[str(ctr, "name")] = true
		}
	}
	for i, r := range rules {
		rule, _ := r.(map[string]any)
		p := rp.index(i)
		action := str(rule, "action")
		switch {
		case action == "":
			c.required(p.child("action"), validValues(podFailurePolicyActions))
		case action == failIndex:
			if spec["backoffLimitPerIndex"] == nil {
				c.invalid(p.child("action"), jsonValue{action}, "requires the backoffLimitPerIndex to be set")
			}
		case !slices.Contains(podFailurePolicyActions, action):
			c.notSupported(p.child("action"), action, podFailurePolicyActions...)
		}
		exitCodes, hasExitCodes := rule["onExitCodes"].(map[string]any)
		if hasExitCodes {
			c.onExitCodes(exitCodes, containers, p.child("onExitCodes"))
		}
		conditions := list(rule, "onPodConditions")
		if len(conditions) > 0 {
			c.onPodConditions(conditions, p.child("onPodConditions"))
		}
		switch {
		case hasExitCodes && len(conditions) > 0:
			c.add(api.CauseTypeFieldValueInvalid, p, "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported")
		case !hasExitCodes && len(conditions) == 0:
			c.add(api.CauseTypeFieldValueInvalid, p, "Invalid value: specifying one of OnExitCodes and OnPodConditions is required")
		}
	}
}

// onExitCodes is kube's validatePodFailurePolicyRuleOnExitCodes.
func (c *causes) onExitCodes(req map[string]any, containers map[string]bool, p path) {
	operator := str(req, "operator")
	switch {
	case operator == "":
		c.required(p.child("operator"), validValues(exitCodesOperators))
	case !slices.Contains(exitCodesOperators, operator):
		c.notSupported(p.child("operator"), operator, exitCodesOperators...)
	}
	if name, ok := req["containerName"].(string); ok && !containers[name] {
		c.invalid(p.child("containerName"), name, "must be one of the container or initContainer names in the pod template")
	}
	vp := p.child("values")
	raw, _ := req["values"].([]any)
	values := make([]int64, len(raw))
	for i, v := range raw {
		values[i], _ = integer(v)
	}
	switch {
	case len(values) == 0:
		c.invalid(vp, jsonValue{raw}, "at least one value is required")
	case len(values) > maxOnExitCodesValues:
		c.tooMany(vp, len(values), maxOnExitCodesValues)
	}
	seen := map[int64]bool{}
	for i, v := range values {
		if operator == "In" && v == 0 {
			c.invalid(vp.index(i), v, "must not be 0 for the In operator")
		}
		if seen[v] {
			c.duplicate(vp.index(i), v)
		}
		seen[v] = true
	}
	if !slices.IsSorted(values) {
		c.invalid(vp, jsonValue{values}, "must be ordered")
	}
}

// onPodConditions is kube's validatePodFailurePolicyRuleOnPodConditions.
func (c *causes) onPodConditions(patterns []any, p path) {
	if len(patterns) > maxOnPodConditionsPatterns {
		c.tooMany(p, len(patterns), maxOnPodConditionsPatterns)
	}
	for i, v := range patterns {
		pattern, _ := v.(map[string]any)
		pp := p.index(i)
		c.qualifiedName(pp.child("type"), str(pattern, "type"))
		switch status := str(pattern, "status"); {
		case status == "":
			c.required(pp.child("status"), validValues(conditionStatuses))
		case !slices.Contains(conditionStatuses, status):
			c.notSupported(pp.child("status"), status, conditionStatuses...)
		}
	}
}

// successPolicy is kube's validateSuccessPolicy of an Indexed Job of the
// given completions.
func (c *causes) successPolicy(sp map[string]any, completions int64, p path) {
	rules := list(sp, "rules")
	rp := p.child("rules")
	if len(rules) == 0 {
		c.required(rp, "at least one rules must be specified when the successPolicy is specified")
	}
	if len(rules) > maxSuccessPolicyRules {
		c.tooMany(rp, len(rules), maxSuccessPolicyRules)
	}
	for i, r := range rules {
		rule, _ := r.(map[string]any)
		p := rp.index(i)
		indexes, hasIndexes := rule["succeededIndexes"].(string)
		count, hasCount := integer(rule["succeededCount"])
		if !hasIndexes && !hasCount {
			c.required(p, "at least one of succeededCount or succeededIndexes must be specified")
		}
		var total int64
		if hasIndexes {
			ip := p.child("succeededIndexes")
			if len(indexes) > maxSucceededIndexesLength {
				c.tooLong(ip, maxSucceededIndexesLength)
			}
			var err error
			if total, err = indexesTotal(indexes, completions); err != nil {
				c.invalid(ip, indexes, "error parsing succeededIndexes: "+err.Error())
			}
		}
		if hasCount {
			cp := p.child("succeededCount")
			c.nonNegative(cp, count)
			if count > completions {
				c.invalid(cp, count, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions))
			}
			if hasIndexes && count > total {
				c.invalid(cp, count, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", total))
			}
		}
	}
}

// internalSuccessPolicy is a successPolicy as kube's internal type, whose
// fields have no JSON names, renders it in messages.
func internalSuccessPolicy(sp map[string]any) jsonValue {
	if sp == nil {
		return jsonValue{nil}
	}
	type rule struct {
		SucceededIndexes *string
		SucceededCount   *int64
	}
	var rules []rule
	for _, r := range list(sp, "rules") {
		r, _ := r.(map[string]any)
		var out rule
		if s, ok := r["succeededIndexes"].(string); ok {
			out.SucceededIndexes = &s
		}
		if n, ok := integer(r["succeededCount"]); ok {
			out.SucceededCount = &n
		}
		rules = append(rules, out)
	}
	return jsonValue{struct{ Rules []rule }{rules}}
}

// internalPodFailurePolicy is a podFailurePolicy as kube's internal type
// renders it in messages.
func internalPodFailurePolicy(pfp map[string]any) jsonValue {
	if pfp == nil {
		return jsonValue{nil}
	}
	type exitCodes struct {
		ContainerName *string
		Operator      string
		Values        []int64
	}
	type condition struct{ Type, Status string }
	type rule struct {
		Action          string
		OnExitCodes     *exitCodes
		OnPodConditions []condition
	}
	var rules []rule
	for _, r := range list(pfp, "rules") {
		r, _ := r.(map[string]any)
		out := rule{Action: str(r, "action")}
		if ec, ok := r["onExitCodes"].(map[string]any); ok {
			out.OnExitCodes = &exitCodes{Operator: str(ec, "operator")}
			if name, ok := ec["containerName"].(string); ok {
				out.OnExitCodes.ContainerName = &name
			}
			if values, ok := ec["values"].([]any); ok {
				out.OnExitCodes.Values = make([]int64, len(values))
				for i, v := range values {
					out.OnExitCodes.Values[i], _ = integer(v)
				}
			}
		}
		for _, pc := range list(r, "onPodConditions") {
			pc, _ := pc.(map[string]any)
			out.OnPodConditions = append(out.OnPodConditions, condition{str(pc, "type"), str(pc, "status")})
		}
		rules = append(rules, out)
	}
	return jsonValue{struct{ Rules []rule }{rules}}
}

// indexesTotal is kube's validateIndexesFormat: intervals ("1,3-5,7") in
// increasing order below completions; it returns how many indexes they
// hold.
func indexesTotal(s string, completions int64) (int64, error) {
	if s == "" {
		return 0, nil
	}
	var total int64
	last := int64(-1)
	for _, interval := range strings.Split(s, ",") {
		x, y, err := indexInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}

// indexInterval is kube's parseIndexInterval.
func indexInterval(s string, completions int64) (int64, int64, error) {
	limits := strings.Split(s, "-")
	if len(limits) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", s)
	}
	var bounds [2]int64
	for i, l := range limits {
		n, err := strconv.Atoi(l)
		if err != nil {
			return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", l)
		}
		if int64(n) >= completions {
			return 0, 0, fmt.Errorf("too large index: %q", l)
		}
		bounds[i] = int64(n)
	}
	if len(limits) == 1 {
		return bounds[0], bounds[0], nil
	}
	if bounds[0] >= bounds[1] {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", bounds[0], bounds[1])
	}
	return bounds[0], bounds[1], nil
}

// cronJob is the part of kube's validateCronJobSpec that checks the new
// CronJob alone: the schedule (robfig/cron's standard parser, as kube's),
// the concurrency policy, the job template (a Job's spec whose selector
// the controller generates), history limits. cronJobCreate and
// cronJobUpdate check the time zones.
func cronJob(o api.Object) []api.StatusCause {
	var c causes
	spec := object(o, "spec")
	p := path("spec")
	if schedule := str(spec, "schedule"); schedule == "" {
		c.required(p.child("schedule"), "")
	} else if err := parseSchedule(schedule); err != nil {
		c.invalid(p.child("schedule"), schedule, err.Error())
	}
	c.nonNegative(p.child("startingDeadlineSeconds"), spec["startingDeadlineSeconds"])
	switch policy := str(spec, "concurrencyPolicy"); {
	case policy == "":
		c.required(p.child("concurrencyPolicy"), "")
	case !slices.Contains(concurrencyPolicies, policy):
		c.notSupported(p.child("concurrencyPolicy"), policy, concurrencyPolicies...)
	}
	jp := p.child("jobTemplate", "spec")
	jobSpec := object(object(spec, "jobTemplate"), "spec")
	c.jobSpec(jobSpec, jp)
	if raw, ok := jobSpec["selector"].(map[string]any); ok {
		c.invalid(jp.child("selector"), jsonValue{labelSelector(raw)}, "`selector` will be auto-generated")
	}
	if jobSpec["manualSelector"] == true {
		c.add(api.CauseTypeFieldValueNotSupported, jp.child("manualSelector"), `Unsupported value: true: supported values: "nil", "false"`)
	}
	c.nonNegative(p.child("successfulJobsHistoryLimit"), spec["successfulJobsHistoryLimit"])
	c.nonNegative(p.child("failedJobsHistoryLimit"), spec["failedJobsHistoryLimit"])
	return c
}

// cronJobCreate is what ValidateCronJobCreate adds to cronJob: no TZ in
// the schedule, the time zone, a name short enough for the Jobs it names.
func cronJobCreate(_ context.Context, o api.Object) []api.StatusCause {
	var c causes
	c.timeZones(object(o, "spec"), false, true)
	if name := str(object(o, "metadata"), "name"); len(name) > maxCronJobNameLength {
		c.invalid("metadata.name", name, fmt.Sprintf("must be no more than %d characters", maxCronJobNameLength))
	}
	return c
}

// cronJobUpdate is what ValidateCronJobUpdate adds to cronJob: a TZ in the
// schedule only where the stored one had it (and then no timeZone), the
// time zone when it changed.
func cronJobUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	spec, oldSpec := object(o, "spec"), object(old, "spec")
	c.timeZones(spec, strings.Contains(str(oldSpec, "schedule"), "TZ"), !equal(spec["timeZone"], oldSpec["timeZone"]))
	return c
}

// timeZones is the part of kube's validateScheduleFormat about TZ and
// CRON_TZ in a set schedule (allowed where the stored schedule had one:
// allowTZ), and validateTimeZone when checkZone.
func (c *causes) timeZones(spec map[string]any, allowTZ, checkZone bool) {
	p := path("spec")
	tz, hasZone := spec["timeZone"].(string)
	if schedule := str(spec, "schedule"); strings.Contains(schedule, "TZ") {
		switch {
		case allowTZ && hasZone:
			c.invalid(p.child("schedule"), schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule")
		case !allowTZ:
			c.invalid(p.child("schedule"), schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead")
		}
	}
	if hasZone && checkZone {
		c.timeZone(tz, p.child("timeZone"))
	}
}

// parseSchedule is kube's ParseCronScheduleWithPanicRecovery: the parser
// panics on some malformed schedules ("TZ=0").
func parseSchedule(schedule string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("invalid schedule format: %v", r)
		}
	}()
	_, err = cron.ParseStandard(schedule)
	return err
}

var timeZoneChars = regexp.MustCompile(`^[A-Za-z\.\-_0-9+]{1,14}$`)

// timeZone is kube's validateTimeZone: an IANA name the server's time zone
// database (embedded, as kube-apiserver's) knows, never Local.
func (c *causes) timeZone(tz string, p path) {
	if tz == "" {
		c.invalid(p, tz, "timeZone must be nil or non-empty string")
		return
	}
	for _, part := range strings.Split(tz, "/") {
		if part == "." || part == ".." || strings.HasPrefix(part, "-") || !timeZoneChars.MatchString(part) {
			c.invalid(p, tz, "unknown time zone "+tz)
			return
		}
	}
	if strings.EqualFold(tz, "Local") {
		c.invalid(p, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones")
	}
	if _, err := time.LoadLocation(tz); err != nil {
		c.invalid(p, tz, err.Error())
	}
}

// invalidSelectorValue is apimachinery's LabelSelectorHasInvalidLabelValue
// of an object's spec.selector.
func invalidSelectorValue(o api.Object) bool {
	raw, _ := object(o, "spec")["selector"].(map[string]any)
	ls := labelSelector(raw)
	if ls == nil {
		return false
	}
	for _, r := range ls.MatchExpressions {
		for _, v := range r.Values {
			if len(kubefmt.LabelValue(v)) > 0 {
				return true
			}
		}
	}
	return false
}
