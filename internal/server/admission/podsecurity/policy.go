// Package podsecurity is the Pod Security Standards as kube-apiserver's
// PodSecurity admission enforces them (k8s.io/pod-security-admission's
// api and policy packages): levels and versions, the policy a
// namespace's pod-security.kubernetes.io labels ask for, the checks of
// the baseline and restricted levels at every version, and the
// PodSecurityConfiguration of the admission configuration file. It is
// our own code on our own small pod type, so that the product does not
// need k8s.io/api; test/interop proves its answers equal kube's.
package podsecurity

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Level is a Pod Security Standards level.
type Level string

// The levels, from the loosest.
const (
	LevelPrivileged Level = "privileged"
	LevelBaseline   Level = "baseline"
	LevelRestricted Level = "restricted"
)

// The namespace labels that set a policy, and the prefix of the audit
// annotations the plugin writes.
const (
	LabelPrefix         = "pod-security.kubernetes.io/"
	EnforceLevelLabel   = LabelPrefix + "enforce"
	EnforceVersionLabel = LabelPrefix + "enforce-version"
	AuditLevelLabel     = LabelPrefix + "audit"
	AuditVersionLabel   = LabelPrefix + "audit-version"
	WarnLevelLabel      = LabelPrefix + "warn"
	WarnVersionLabel    = LabelPrefix + "warn-version"
)

// ParseLevel is kube's: an unknown level is an error (and restricted).
func ParseLevel(s string) (Level, error) {
	switch l := Level(s); l {
	case LevelPrivileged, LevelBaseline, LevelRestricted:
		return l, nil
	}
	return LevelRestricted, fmt.Errorf("must be one of privileged, baseline, restricted")
}

// CompareLevels is <0, 0 or >0 as a is looser than, as strict as or
// stricter than b.
func CompareLevels(a, b Level) int {
	rank := func(l Level) int {
		switch l {
		case LevelPrivileged:
			return 0
		case LevelRestricted:
			return 2
		}
		return 1
	}
	return rank(a) - rank(b)
}

// Version is a version of the standards: v1.Minor, or latest (newer
// than every numbered one). Only major version 1 parses.
type Version struct {
	Minor  int
	Latest bool
}

// LatestVersion is "latest".
var LatestVersion = Version{Latest: true}

func (v Version) String() string {
	if v.Latest {
		return "latest"
	}
	return "v1." + strconv.Itoa(v.Minor)
}

// Older says whether v is older than o.
func (v Version) Older(o Version) bool {
	return !v.Latest && (o.Latest || v.Minor < o.Minor)
}

var versionPattern = regexp.MustCompile(`^v1\.(0|[1-9][0-9]*)$`)

// ParseVersion is kube's: "latest" or "v1.x"; an error is latest.
func ParseVersion(s string) (Version, error) {
	if s == "latest" {
		return LatestVersion, nil
	}
	m := versionPattern.FindStringSubmatch(s)
	if m == nil {
		return LatestVersion, fmt.Errorf(`must be "latest" or "v1.x"`)
	}
	minor, err := strconv.Atoi(m[1])
	if err != nil {
		return LatestVersion, fmt.Errorf(`must be "latest" or "v1.x"`)
	}
	return Version{Minor: minor}, nil
}

// LevelVersion is a level at a version, "level:version" as kube writes it.
type LevelVersion struct {
	Level   Level
	Version Version
}

func (lv LevelVersion) String() string { return string(lv.Level) + ":" + lv.Version.String() }

// Equivalent says whether two enforce the same: any two privileged do.
func (lv LevelVersion) Equivalent(o LevelVersion) bool {
	return lv.Level == LevelPrivileged && o.Level == LevelPrivileged || lv == o
}

// Policy is what a namespace enforces, audits and warns of.
type Policy struct {
	Enforce, Audit, Warn LevelVersion
}

// Equivalent says whether two policies check the same in every mode.
func (p Policy) Equivalent(o Policy) bool {
	return p.Enforce.Equivalent(o.Enforce) && p.Audit.Equivalent(o.Audit) && p.Warn.Equivalent(o.Warn)
}

// FullyPrivileged says whether the policy checks nothing.
func (p Policy) FullyPrivileged() bool {
	return p.Enforce.Level == LevelPrivileged && p.Audit.Level == LevelPrivileged && p.Warn.Level == LevelPrivileged
}

// PolicyOf is kube's PolicyToEvaluate: the policy a namespace's labels
// set over the defaults, and the labels' errors. A bad enforce level
// enforces restricted; bad audit and warn levels fail open; a warn level
// not set follows a stricter enforce level (and its version, unless the
// warn version is set).
func PolicyOf(labels map[string]string, defaults Policy) (Policy, field.ErrorList) {
	p := defaults
	if len(labels) == 0 {
		return p, nil
	}
	var errs field.ErrorList
	note := func(label string, err error) {
		if err != nil {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "labels").Key(label), labels[label], err.Error()))
		}
	}
	level := func(label string, to *Level, failOpen bool) (set, ok bool) {
		s, set := labels[label]
		if !set {
			return false, false
		}
		l, err := ParseLevel(s)
		note(label, err)
		if err != nil && failOpen {
			l = LevelPrivileged
		}
		*to = l
		return true, err == nil
	}
	version := func(label string, to *Version) bool {
		s, set := labels[label]
		if set {
			v, err := ParseVersion(s)
			note(label, err)
			*to = v
		}
		return set
	}
	_, enforced := level(EnforceLevelLabel, &p.Enforce.Level, false)
	version(EnforceVersionLabel, &p.Enforce.Version)
	level(AuditLevelLabel, &p.Audit.Level, true)
	version(AuditVersionLabel, &p.Audit.Version)
	warnSet, _ := level(WarnLevelLabel, &p.Warn.Level, true)
	warnVersionSet := version(WarnVersionLabel, &p.Warn.Version)
	if !warnSet && enforced && CompareLevels(p.Enforce.Level, p.Warn.Level) > 0 {
		p.Warn.Level = p.Enforce.Level
		if !warnVersionSet {
			p.Warn.Version = p.Enforce.Version
		}
	}
	return p, errs
}

// joinQuote is kube's list of names in details: "a", "b".
func joinQuote(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return `"` + strings.Join(items, `", "`) + `"`
}

// plural is singular for one item, else plural.
func plural(singular, plural string, n int) string {
	if n == 1 {
		return singular
	}
	return plural
}
