package selector_test

import (
	"math/rand/v2"
	"strings"
)

// Pieces the generators compose selectors from: valid and invalid keys and
// values at and over the length limits, every operator, odd whitespace (\v and
// \f are not whitespace to Kubernetes), NUL, escapes and non-ASCII bytes.
var (
	labelKeys = []string{
		"a", "app", "in", "notin", "A", "a.b", "a_b", "a-b", "-a", "a-", "1", "a..b",
		"example.com/app", "Example.com/app", "k8s.io/x", "a-.b/c", "a/b/c", "/a", "a/", "/",
		strings.Repeat("x", 63), strings.Repeat("x", 64),
		strings.Repeat("p", 253) + "/n", strings.Repeat("p", 254) + "/n",
		strings.Repeat("p", 100) + ".io/" + strings.Repeat("n", 63),
		"é", "a\x00b", "a\xffb", "tier", "env",
	}
	labelValues = []string{
		"", "b", "B", "in", "notin", "-b", "b-", "x.y", "a_b", "1", "12", "007", "-3", "+4",
		"9223372036854775807", "9223372036854775808", strings.Repeat("v", 63), strings.Repeat("v", 64),
		"é", "a/b", "prod", "web",
	}
	labelOps    = []string{"=", "==", "!=", " in ", " notin ", "in", "notin", ">", "<", "!", "", " ", "===", "!==", "=!", "<=", ">="}
	whitespace  = []string{"", "", "", " ", "\t", "\n", "\r", "\v", "\f", "  ", "\x00", " \x00"}
	punctuation = []string{",", "(", ")", "!", "=", "<", ">", "()", ",,", "\\"}
)

func pick[T any](r *rand.Rand, from []T) T { return from[r.IntN(len(from))] }

func space(r *rand.Rand) string {
	if r.IntN(3) == 0 {
		return pick(r, whitespace)
	}
	return ""
}

// genLabelSelector returns a selector that is usually close to valid.
func genLabelSelector(r *rand.Rand) string {
	var b strings.Builder
	if r.IntN(20) == 0 {
		return genLongSelector(r)
	}
	for i := range r.IntN(5) {
		if i > 0 {
			b.WriteString(space(r) + "," + space(r))
		}
		b.WriteString(space(r) + genRequirement(r) + space(r))
	}
	if r.IntN(8) == 0 {
		return mutate(r, b.String())
	}
	return b.String()
}

// genLongSelector returns a valid selector of 13 to 24 requirements on a few
// keys: beyond 12, sort.Sort is not stable, and String must still agree.
func genLongSelector(r *rand.Rand) string {
	reqs := make([]string, 13+r.IntN(12))
	for i := range reqs {
		k, v := pick(r, []string{"a", "b", "c"}), pick(r, []string{"1", "2", "x"})
		reqs[i] = pick(r, []string{k, "!" + k, k + "=" + v, k + "==" + v, k + "!=" + v, k + " in (" + v + ",y)", k + ">" + v})
	}
	return strings.Join(reqs, ",")
}

func genRequirement(r *rand.Rand) string {
	key := pick(r, labelKeys)
	switch r.IntN(6) {
	case 0:
		return key
	case 1:
		return "!" + space(r) + key
	case 2, 3:
		return key + space(r) + pick(r, labelOps) + space(r) + pick(r, labelValues)
	default:
		return key + space(r) + pick(r, []string{" in ", " notin ", "in", "notin", " in"}) + space(r) + genValueSet(r)
	}
}

func genValueSet(r *rand.Rand) string {
	var b strings.Builder
	b.WriteString("(")
	for i := range r.IntN(4) {
		if i > 0 {
			b.WriteString(space(r) + "," + space(r))
		}
		b.WriteString(pick(r, labelValues))
	}
	if r.IntN(10) > 0 {
		b.WriteString(")")
	}
	return b.String()
}

// mutate inserts, deletes or replaces a piece at a random byte offset.
func mutate(r *rand.Rand, s string) string {
	i := r.IntN(len(s) + 1)
	switch r.IntN(3) {
	case 0:
		return s[:i] + pick(r, punctuation) + s[i:]
	case 1:
		return s[:i] + pick(r, whitespace) + pick(r, labelOps) + s[i:]
	default:
		return s[:i] + s[min(len(s), i+1+r.IntN(3)):]
	}
}

// genSoup returns a random string of selector pieces, mostly invalid.
func genSoup(r *rand.Rand) string {
	pools := [][]string{labelKeys, labelValues, labelOps, whitespace, punctuation}
	var b strings.Builder
	for range r.IntN(12) {
		b.WriteString(pick(r, pools[r.IntN(len(pools))]))
	}
	return b.String()
}

// genLabelSets returns label sets built from the pieces the selector may use.
func genLabelSets(r *rand.Rand) []map[string]string {
	sets := []map[string]string{nil}
	for range 8 {
		m := map[string]string{}
		for range r.IntN(6) {
			m[pick(r, labelKeys)] = pick(r, labelValues)
		}
		sets = append(sets, m)
	}
	return sets
}

var (
	fieldKeys   = []string{"metadata.name", "metadata.namespace", "spec.nodeName", "a", "", " a ", "a\\", "a!", "a\\,b", "é", "x\xff"}
	fieldOps    = []string{"=", "==", "!=", "!", "===", "=!", "!=="}
	fieldValues = []string{
		"", "foo", "foo bar", " ", "\\,", "\\=", "\\\\", "\\!", "\\", ",", "=", "a\\,b", "é", "\xff\\,", "\\é",
		"x\\", "\x00", "!", "default", "kube-system",
	}
)

// genFieldSelector returns a field selector that is usually close to valid.
func genFieldSelector(r *rand.Rand) string {
	var b strings.Builder
	for i := range r.IntN(5) {
		if i > 0 {
			b.WriteString(pick(r, []string{",", ",", ",", ",,", "\\,", ""}))
		}
		if r.IntN(12) == 0 {
			b.WriteString(pick(r, fieldKeys))
			continue
		}
		b.WriteString(pick(r, fieldKeys) + pick(r, fieldOps) + pick(r, fieldValues) + pick(r, fieldValues))
	}
	return b.String()
}

func genFieldSets(r *rand.Rand) []map[string]string {
	sets := []map[string]string{nil}
	for range 8 {
		m := map[string]string{}
		for range r.IntN(4) {
			m[pick(r, fieldKeys)] = pick(r, []string{"", "foo", ",", "=", "\\", "é", "\uFFFD,", "default", "foo bar"})
		}
		sets = append(sets, m)
	}
	return sets
}
