package selector

import (
	"slices"
	"strconv"
	"strings"
)

// Labels is a label selector: a conjunction of requirements on an object's
// labels. The zero value selects everything. A Labels is immutable and safe for
// concurrent use.
type Labels struct {
	reqs    []requirement // sorted by key
	nothing bool          // selects nothing (FromLabelSelector(nil))
}

// operator relates a label key to a requirement's values.
type operator int

const (
	opEquals       operator = iota // k=v
	opDoubleEquals                 // k==v
	opNotEquals                    // k!=v
	opIn                           // k in (v1,v2)
	opNotIn                        // k notin (v1,v2)
	opExists                       // k
	opDoesNotExist                 // !k
	opGreaterThan                  // k>5
	opLessThan                     // k<5
)

// requirement is one term of a label selector.
type requirement struct {
	key    string
	op     operator
	values []string // sorted; one for =, ==, !=, >, <; none for exists
}

// Matches reports whether labels satisfy every requirement. Missing labels
// satisfy != , notin and !k, as in Kubernetes.
func (s Labels) Matches(labels map[string]string) bool {
	if s.nothing {
		return false
	}
	for _, r := range s.reqs {
		if !r.matches(labels) {
			return false
		}
	}
	return true
}

func (r requirement) matches(labels map[string]string) bool {
	v, ok := labels[r.key]
	switch r.op {
	case opEquals, opDoubleEquals, opIn:
		return ok && slices.Contains(r.values, v)
	case opNotEquals, opNotIn:
		return !ok || !slices.Contains(r.values, v)
	case opExists:
		return ok
	case opDoesNotExist:
		return !ok
	default: // opGreaterThan, opLessThan
		return ok && r.compare(v)
	}
}

// compare reports whether the integer label value v is greater (or less) than
// the requirement's integer value. A value that is not a base-10 int64 never
// matches.
func (r requirement) compare(v string) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return false
	}
	limit, _ := strconv.ParseInt(r.values[0], 10, 64) // validated when built
	if r.op == opGreaterThan {
		return n > limit
	}
	return n < limit
}

// Empty reports whether the selector selects everything.
func (s Labels) Empty() bool { return !s.nothing && len(s.reqs) == 0 }

// RequiresExactMatch reports the single value the selector requires for
// label key (k=v, k==v, or k in (v)), as Kubernetes decides it: only the
// first requirement on key, in sorted order, is considered.
func (s Labels) RequiresExactMatch(key string) (value string, ok bool) {
	for _, r := range s.reqs {
		if r.key != key {
			continue
		}
		switch r.op {
		case opEquals, opDoubleEquals, opIn:
			if len(r.values) == 1 {
				return r.values[0], true
			}
		}
		return "", false
	}
	return "", false
}

// String returns the canonical form of the selector, as Kubernetes writes it:
// requirements sorted by key, joined by ","; values of in and notin sorted.
// It parses back to an equivalent selector, except for the selector that
// selects nothing, whose String is "" as in Kubernetes.
func (s Labels) String() string {
	var b strings.Builder
	for i, r := range s.reqs {
		if i > 0 {
			b.WriteByte(',')
		}
		r.write(&b)
	}
	return b.String()
}

var opText = [...]string{
	opEquals:       "=",
	opDoubleEquals: "==",
	opNotEquals:    "!=",
	opIn:           " in ",
	opNotIn:        " notin ",
	opGreaterThan:  ">",
	opLessThan:     "<",
}

func (r requirement) write(b *strings.Builder) {
	switch r.op {
	case opExists:
		b.WriteString(r.key)
	case opDoesNotExist:
		b.WriteString("!" + r.key)
	case opIn, opNotIn:
		b.WriteString(r.key + opText[r.op] + "(" + strings.Join(r.values, ",") + ")")
	default:
		b.WriteString(r.key + opText[r.op] + r.values[0])
	}
}

// sortByKey orders requirements by key as Kubernetes does (sort.Sort, which
// shares its algorithm with slices.SortFunc), so String matches its output.
func sortByKey(reqs []requirement) {
	slices.SortFunc(reqs, compareKeys)
}

func compareKeys(a, b requirement) int { return strings.Compare(a.key, b.key) }
