package podsecurity

import (
	"cmp"
	"slices"
	"strings"
)

// Result is the verdict of a level on a pod: the reasons of the checks
// that refused it, each with its details (kube's AggregateCheckResult).
type Result struct {
	Reasons, Details []string
}

// Allowed says whether every check passed.
func (r Result) Allowed() bool { return len(r.Reasons) == 0 }

// Reason is the reasons, comma-separated (kube's ForbiddenReason).
func (r Result) Reason() string { return strings.Join(r.Reasons, ", ") }

// Detail is each reason with its details in parentheses,
// comma-separated (kube's ForbiddenDetail).
func (r Result) Detail() string {
	var b strings.Builder
	for i, reason := range r.Reasons {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(reason)
		if r.Details[i] != "" {
			b.WriteString(" (" + r.Details[i] + ")")
		}
	}
	return b.String()
}

// ordered are the checks in kube's order: baseline ones by id, then
// restricted ones by id (ids compare as bytes).
var ordered = func() []check {
	out := slices.Clone(checks)
	slices.SortFunc(out, func(a, b check) int {
		return cmp.Or(CompareLevels(a.level, b.level), strings.Compare(a.id, b.id))
	})
	return out
}()

// at is the check's behaviour at version v, if it applies then: the last
// of its versions not newer than v.
func (c *check) at(v Version) (versioned, bool) {
	for i := len(c.versions) - 1; i >= 0; i-- {
		if vc := c.versions[i]; !v.Older(Version{Minor: vc.minor}) {
			return vc, true
		}
	}
	return versioned{}, false
}

// Evaluate checks a pod against a level at a version: privileged allows
// everything; baseline applies the baseline checks of that version;
// restricted adds its own, which replace the baseline checks they
// override at that version. A version newer than every check's is
// checked as the newest.
func Evaluate(lv LevelVersion, pod *Pod) Result {
	if lv.Level == LevelPrivileged {
		return Result{}
	}
	type step struct {
		id string
		fn checkFn
	}
	var applied []step
	overridden := map[string]bool{}
	for i := range ordered {
		c := &ordered[i]
		if CompareLevels(c.level, lv.Level) > 0 {
			continue
		}
		if vc, ok := c.at(lv.Version); ok {
			applied = append(applied, step{c.id, vc.fn})
			for _, id := range vc.overrides {
				overridden[id] = true
			}
		}
	}
	var r Result
	for _, s := range applied {
		if overridden[s.id] {
			continue
		}
		if res := s.fn(pod); res != allowed {
			r.Reasons = append(r.Reasons, res.reason)
			r.Details = append(r.Details, res.detail)
		}
	}
	return r
}
