package validation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// jobStatusUpdate is kube's ValidateJobUpdateStatus with JobManagedBy
// (GA) on: counts not negative, uncounted pods' UIDs set and unique,
// terminal conditions never disabled and consistent with each other,
// with the times, counts and indexes; most transition rules apply only
// when the write changes what they are about (kube's
// getStatusValidationOptions), so that a status stored before them takes
// unrelated writes.
func jobStatusUpdate(_ context.Context, o, old api.Object) []api.StatusCause {
	var c causes
	s, was := jobStatusOf(o), jobStatusOf(old)
	spec := object(old, "spec") // a status write keeps the stored spec
	p := path("status")
	for _, f := range []string{"active", "succeeded", "failed", "ready", "terminating"} {
		c.nonNegative(p.child(f), s.m[f])
	}
	c.uncountedUIDs(p.child("uncountedTerminatedPods"), object(s.m, "uncountedTerminatedPods"))

	finishedChanged := s.finished() != was.finished()
	completeChanged := s.is("Complete") != was.is("Complete")
	failedChanged := s.is("Failed") != was.is("Failed")
	completedIndexesChanged := str(s.m, "completedIndexes") != str(was.m, "completedIndexes")
	failedIndexes, hasFailedIndexes := s.m["failedIndexes"].(string)
	wasFailedIndexes, hadFailedIndexes := was.m["failedIndexes"].(string)
	failedIndexesChanged := hasFailedIndexes != hadFailedIndexes || failedIndexes != wasFailedIndexes
	activeChanged := count(s.m, "active") != count(was.m, "active")
	start, completion := s.time("startTime"), s.time("completionTime")
	startChanged, completionChanged := !sameTime(start, was.time("startTime")), !sameTime(completion, was.time("completionTime"))
	completions, hasCompletions := integer(spec["completions"])
	isFinished, complete := s.finished(), s.is("Complete")

	cp := p.child("conditions")
	if (completeChanged || failedChanged) && complete && s.is("Failed") {
		c.invalidOmitted(cp, "cannot set Complete=True and Failed=true conditions")
	}
	if (completeChanged || s.is("FailureTarget") != was.is("FailureTarget")) && complete && s.is("FailureTarget") {
		c.invalidOmitted(cp, "cannot set Complete=True and FailureTarget=true conditions")
	}
	if completeChanged || completionChanged {
		if completion != nil && !complete {
			c.invalid(p.child("completionTime"), rfc3339(completion), "cannot set completionTime when there is no Complete=True condition")
		}
		if completion == nil && complete {
			c.required(p.child("completionTime"), "completionTime is required for Complete jobs")
		}
	}
	if (startChanged || completionChanged) && start != nil && completion != nil && completion.Before(*start) {
		c.invalid(p.child("completionTime"), rfc3339(completion), "must be equal to or after `startTime`")
	}
	if (failedChanged || failedIndexesChanged) && s.is("Failed") && !s.is("FailureTarget") {
		c.invalidOmitted(cp, "cannot set Failed=True condition without the FailureTarget=true condition")
	}
	if (completeChanged || s.is("SuccessCriteriaMet") != was.is("SuccessCriteriaMet")) && complete && !s.is("SuccessCriteriaMet") {
		c.invalidOmitted(cp, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition")
	}
	if (finishedChanged || activeChanged) && count(s.m, "active") > 0 && isFinished {
		c.invalid(p.child("active"), count(s.m, "active"), "active>0 is invalid for finished job")
	}
	suspendedWithNoCompletions := spec["suspend"] == true && hasCompletions && completions == 0
	if (finishedChanged || startChanged) && !suspendedWithNoCompletions && start == nil && isFinished {
		c.required(p.child("startTime"), "startTime is required for finished job")
	}
	uncounted, hasUncounted := s.m["uncountedTerminatedPods"].(map[string]any)
	if (finishedChanged || !sameUncounted(uncounted, object(was.m, "uncountedTerminatedPods"), hasUncounted, was.m["uncountedTerminatedPods"] != nil)) &&
		isFinished && len(list(uncounted, "succeeded"))+len(list(uncounted, "failed")) > 0 {
		c.invalid(p.child("uncountedTerminatedPods"), internalUncounted(uncounted), "must be empty for finished job")
	}
	completed := str(s.m, "completedIndexes")
	_, perIndex := spec["backoffLimitPerIndex"]
	if completedIndexesChanged && hasCompletions {
		if _, err := indexesTotal(completed, completions); err != nil {
			c.invalid(p.child("completedIndexes"), completed, "error parsing completedIndexes: "+err.Error())
		}
	}
	if failedIndexesChanged && hasCompletions && perIndex && hasFailedIndexes {
		if _, err := indexesTotal(failedIndexes, completions); err != nil {
			c.invalid(p.child("failedIndexes"), failedIndexes, "error parsing failedIndexes: "+err.Error())
		}
	}
	if completedIndexesChanged && completed != "" && str(spec, "completionMode") != "Indexed" {
		c.invalid(p.child("completedIndexes"), completed, "cannot set non-empty completedIndexes when non-indexed completion mode")
	}
	if failedIndexesChanged && !perIndex && hasFailedIndexes {
		c.invalid(p.child("failedIndexes"), failedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null")
	}
	if (failedIndexesChanged || completedIndexesChanged) && hasCompletions && hasFailedIndexes {
		if err := indexesOverlap(completed, failedIndexes, completions); err != nil {
			c.invalid(p.child("failedIndexes"), failedIndexes, err.Error())
		}
	}
	terminating, hasTerminating := integer(s.m["terminating"])
	wasTerminating, hadTerminating := integer(was.m["terminating"])
	if (finishedChanged || hasTerminating != hadTerminating || terminating != wasTerminating) && hasTerminating && terminating > 0 && isFinished {
		c.invalid(p.child("terminating"), terminating, "terminating>0 is invalid for finished job")
	}
	ready, hasReady := integer(s.m["ready"])
	wasReady, hadReady := integer(was.m["ready"])
	if (hasReady != hadReady || ready != wasReady || activeChanged) && hasReady && ready > count(s.m, "active") {
		c.invalid(p.child("ready"), ready, "cannot set more ready pods than active")
	}
	if s.is("SuccessCriteriaMet") && s.is("Failed") {
		c.invalidOmitted(cp, "cannot set SuccessCriteriaMet=True and Failed=true conditions")
	}
	if s.is("SuccessCriteriaMet") && s.is("FailureTarget") {
		c.invalidOmitted(cp, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions")
	}
	if spec["successPolicy"] != nil && !s.is("SuccessCriteriaMet") && complete {
		c.invalidOmitted(cp, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True")
	}

	// ValidateJobStatusUpdate's transitions
	for _, t := range []string{"Failed", "Complete", "FailureTarget"} {
		if was.is(t) && !s.is(t) {
			c.invalidOmitted(cp, fmt.Sprintf("cannot disable the terminal %s=True condition", t))
		}
	}
	if n := count(s.m, "failed"); n < count(was.m, "failed") {
		c.invalid(p.child("failed"), n, "cannot decrease the failed counter")
	}
	parallelism, hasParallelism := integer(spec["parallelism"])
	scalable := str(spec, "completionMode") == "Indexed" && hasCompletions == hasParallelism && completions == parallelism
	if n := count(s.m, "succeeded"); !scalable && n < count(was.m, "succeeded") {
		c.invalid(p.child("succeeded"), n, "cannot decrease the succeeded counter")
	}
	if wasCompletion := was.time("completionTime"); completion != nil && wasCompletion != nil && !completion.Equal(*wasCompletion) {
		c.invalid(p.child("completionTime"), rfc3339(completion), immutable)
	}
	resuming := was.is("Suspended") && s.hasCondition("Suspended", "False")
	if wasStart := was.time("startTime"); startChanged && !resuming && wasStart != nil && spec["suspend"] != true {
		var v any // kube's nil *metav1.Time renders as null
		if start != nil {
			v = rfc3339(start)
		}
		c.invalid(p.child("startTime"), v, "field is immutable for unsuspended job once set")
	}
	if was.is("SuccessCriteriaMet") && !s.is("SuccessCriteriaMet") {
		c.invalidOmitted(cp, "cannot disable the SuccessCriteriaMet=True condition")
	}
	if was.is("Complete") && !was.is("SuccessCriteriaMet") && s.is("SuccessCriteriaMet") {
		c.invalidOmitted(cp, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions")
	}
	return c
}

// jobStatus is a Job's status as its rules read it.
type jobStatus struct{ m map[string]any }

func jobStatusOf(o api.Object) jobStatus { return jobStatus{object(o, "status")} }

// hasCondition says whether a condition of type t has status.
func (s jobStatus) hasCondition(t, status string) bool {
	return slices.ContainsFunc(list(s.m, "conditions"), func(v any) bool {
		cond := asObject(v)
		return str(cond, "type") == t && str(cond, "status") == status
	})
}

// is is kube's IsConditionTrue.
func (s jobStatus) is(t string) bool { return s.hasCondition(t, "True") }

// finished is kube's IsJobFinished.
func (s jobStatus) finished() bool { return s.is("Complete") || s.is("Failed") }

// time is the time field f, nil when unset (the schema checked its format).
func (s jobStatus) time(f string) *time.Time {
	v, ok := s.m[f].(string)
	if !ok {
		return nil
	}
	t, err := time.Parse(time.RFC3339, v)
	if err != nil {
		return nil
	}
	return &t
}

func sameTime(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Equal(*b)
}

// rfc3339 is t as metav1.Time renders it.
func rfc3339(t *time.Time) string { return t.UTC().Format(time.RFC3339) }

// uncountedUIDs checks the UIDs of the uncounted terminated pods: set, and
// each in one list once.
func (c *causes) uncountedUIDs(p path, uncounted map[string]any) {
	seen := map[string]bool{}
	for _, f := range []string{"succeeded", "failed"} {
		for i, v := range list(uncounted, f) {
			uid, _ := v.(string)
			switch {
			case uid == "":
				c.invalid(p.child(f).index(i), uid, "must not be empty")
			case seen[uid]:
				c.duplicate(p.child(f).index(i), uid)
			default:
				seen[uid] = true
			}
		}
	}
}

// sameUncounted is kube's semantic equality of two uncountedTerminatedPods,
// each set or not: an empty list equals a missing one.
func sameUncounted(a, b map[string]any, aSet, bSet bool) bool {
	if aSet != bSet {
		return false
	}
	for _, f := range []string{"succeeded", "failed"} {
		if !slices.Equal(list(a, f), list(b, f)) {
			return false
		}
	}
	return true
}

// internalUncounted is uncountedTerminatedPods as kube's error renders it:
// its internal type, which has no JSON tags.
func internalUncounted(u map[string]any) any {
	uids := func(f string) []string {
		var out []string
		for _, v := range list(u, f) {
			s, _ := v.(string)
			out = append(out, s)
		}
		return out
	}
	return struct{ Succeeded, Failed []string }{uids("succeeded"), uids("failed")}
}

// indexesOverlap is kube's validateFailedIndexesNotOverlapCompleted: the
// first index both lists hold, intervals that fail to parse skipped.
func indexesOverlap(completed, failed string, completions int64) error {
	if completed == "" || failed == "" {
		return nil
	}
	cs, fs := strings.Split(completed, ","), strings.Split(failed, ",")
	ci, fi := 0, 0
	cx, cy, cerr := indexInterval(cs[0], completions)
	fx, fy, ferr := indexInterval(fs[0], completions)
	for ci < len(cs) && fi < len(fs) {
		switch {
		case cerr != nil:
			if ci++; ci < len(cs) {
				cx, cy, cerr = indexInterval(cs[ci], completions)
			}
		case ferr != nil:
			if fi++; fi < len(fs) {
				fx, fy, ferr = indexInterval(fs[fi], completions)
			}
		case cx <= fy && fx <= cy:
			return fmt.Errorf("failedIndexes and completedIndexes overlap at index: %d", max(cx, fx))
		case cx <= fx:
			if ci++; ci < len(cs) {
				cx, cy, cerr = indexInterval(cs[ci], completions)
			}
		default:
			if fi++; fi < len(fs) {
				fx, fy, ferr = indexInterval(fs[fi], completions)
			}
		}
	}
	return nil
}
