package registry

import (
	"strconv"

	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// JSON returns the JSON encoding of the object kv holds as res serves it
// (what json.Marshal gives for Decode's result) without decoding it: the
// stored bytes with metadata.resourceVersion inserted where json.Marshal
// puts it, keys being sorted. Decoding and encoding an object of 1 KiB
// costs tens of microseconds; this costs one pass over the bytes.
//
// It reports false when the object must be decoded instead: converted
// when read (FromStorage), stored in another apiVersion than res serves,
// or of a shape this does not handle
// (no metadata object, a resourceVersion already there, an escaped key,
// a duplicate top-level field). It does not validate what it skips: the
// store holds what encode wrote, which is json.Marshal's canonical JSON.
func JSON(res *resource.Resource, kv storage.KV) ([]byte, bool) {
	if res.FromStorage != nil {
		return nil, false
	}
	return spliceRevision(kv.Value, res.APIVersion(), kv.ModRevision)
}

// spliceRevision is JSON on stored bytes that should have apiVersion.
func spliceRevision(stored []byte, apiVersion string, rev int64) ([]byte, bool) {
	md, ok := topLevel(stored, apiVersion)
	if !ok {
		return nil, false
	}
	p, ok := revisionPlace(stored, md)
	if !ok {
		return nil, false
	}
	// One allocation, with room for the newline a response ends with.
	out := make([]byte, 0, len(stored)+len(`,"resourceVersion":""`)+20+1)
	out = append(out, stored[:p.at]...)
	if p.commaBefore {
		out = append(out, ',')
	}
	out = append(out, `"resourceVersion":"`...)
	out = strconv.AppendInt(out, rev, 10)
	out = append(out, '"')
	if p.commaAfter {
		out = append(out, ',')
	}
	return append(out, stored[p.at:]...), true
}

// topLevel finds the metadata object of stored (the offset of its '{') and
// checks that stored is one object whose apiVersion is the given one.
func topLevel(stored []byte, apiVersion string) (md int, ok bool) {
	md = -1
	version := false
	i := skipSpace(stored, 0)
	end := eachMember(stored, i, func(m member) bool {
		switch string(m.key) {
		case "apiVersion":
			if version {
				return false
			}
			version = isString(stored[m.value:m.valueEnd], apiVersion)
			return version
		case "metadata":
			if md >= 0 || stored[m.value] != '{' {
				return false
			}
			md = m.value
		}
		return true
	})
	return md, end > 0 && skipSpace(stored, end) == len(stored) && version && md >= 0
}

// isString reports whether raw is the JSON string s, written without escapes.
func isString(raw []byte, s string) bool {
	return len(raw) == len(s)+2 && raw[0] == '"' && string(raw[1:len(raw)-1]) == s
}

// place is where a member goes in an object, and the commas it needs.
type place struct {
	at                      int
	commaBefore, commaAfter bool
}

// revisionPlace finds where resourceVersion goes in the metadata object at
// stored[md]: before the first key that sorts after it, or else before the
// closing brace.
func revisionPlace(stored []byte, md int) (place, bool) {
	p, members := place{at: -1}, 0
	end := eachMember(stored, md, func(m member) bool {
		k := string(m.key)
		if m.escaped || k == "resourceVersion" {
			return false
		}
		if p.at < 0 && k > "resourceVersion" {
			p = place{at: m.at, commaAfter: true}
		}
		members++
		return true
	})
	switch {
	case end < 0:
		return place{}, false
	case p.at < 0:
		return place{at: end - 1, commaBefore: members > 0}, true
	}
	return p, true
}

// member is one member of a JSON object, found in b by eachMember.
type member struct {
	key             []byte // without quotes: b[at+1 : …]
	escaped         bool   // key has escapes, so it is not its raw bytes
	at              int    // offset of the key's opening quote
	value, valueEnd int    // b[value:valueEnd] is the value
}

// eachMember calls fn with each member of the object at b[i] until fn
// returns false. It returns the offset after the closing brace, or -1 if
// fn stopped or the object is malformed.
func eachMember(b []byte, i int, fn func(member) bool) int {
	if i >= len(b) || b[i] != '{' {
		return -1
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1
	}
	for i < len(b) {
		keyEnd, escaped := skipString(b, i)
		if keyEnd < 0 {
			return -1
		}
		colon := skipSpace(b, keyEnd)
		if colon >= len(b) || b[colon] != ':' {
			return -1
		}
		value := skipSpace(b, colon+1)
		valueEnd := skipValue(b, value)
		m := member{key: b[i+1 : keyEnd-1], escaped: escaped, at: i, value: value, valueEnd: valueEnd}
		if valueEnd < 0 || !fn(m) {
			return -1
		}
		i = skipSpace(b, valueEnd)
		switch {
		case i < len(b) && b[i] == '}':
			return i + 1
		case i < len(b) && b[i] == ',':
			i = skipSpace(b, i+1)
		default:
			return -1
		}
	}
	return -1
}

// skipString returns the offset after the string at b[i] and whether it
// has escapes, or -1.
func skipString(b []byte, i int) (int, bool) {
	if i >= len(b) || b[i] != '"' {
		return -1, false
	}
	escaped := false
	for i++; i < len(b); i++ {
		switch b[i] {
		case '\\':
			escaped = true
			i++
		case '"':
			return i + 1, escaped
		}
	}
	return -1, false
}

// skipValue returns the offset after the value at b[i], or -1.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		end, _ := skipString(b, i)
		return end
	case '{', '[':
		return skipComposite(b, i)
	}
	start := i
	for i < len(b) && !isDelimiter(b[i]) {
		i++
	}
	if i == start {
		return -1
	}
	return i
}

// skipComposite returns the offset after the object or array at b[i], or
// -1, counting brackets outside strings.
func skipComposite(b []byte, i int) int {
	depth := 0
	for i < len(b) {
		switch b[i] {
		case '"':
			end, _ := skipString(b, i)
			if end < 0 {
				return -1
			}
			i = end
			continue
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

func isDelimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ':' || c == '"' || c == '{' || c == '[' || isSpace(c)
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func skipSpace(b []byte, i int) int {
	for i < len(b) && isSpace(b[i]) {
		i++
	}
	return i
}

// Metadata returns the bytes of the metadata member of the JSON object b,
// skipping the other members without decoding them, for a reader that
// needs only metadata (the garbage collector); false if b has none or is
// not an object this reader can walk.
func Metadata(b []byte) ([]byte, bool) {
	var md []byte
	eachMember(b, skipSpace(b, 0), func(m member) bool {
		if !m.escaped && string(m.key) == "metadata" {
			md = b[m.value:m.valueEnd]
			return false
		}
		return true
	})
	return md, md != nil
}

// WithoutManagedFields returns the JSON object b without its
// metadata.managedFields, cut out of the bytes, for a reader that never
// reads them (the built-in kinds' printers): a Pod's field sets name each
// of its fields, and decoding them would cost more than the rest. False if
// b has none or is not an object this reader can walk.
func WithoutManagedFields(b []byte) ([]byte, bool) {
	md := -1
	eachMember(b, skipSpace(b, 0), func(m member) bool {
		if !m.escaped && string(m.key) == "metadata" {
			md = m.value
			return false
		}
		return true
	})
	if md < 0 {
		return nil, false
	}
	// Cut the member and a comma: the one after it, else the one before.
	at, end, before, next, last := -1, -1, -1, -1, -1
	eachMember(b, md, func(m member) bool {
		if at >= 0 {
			next = m.at
			return false
		}
		if !m.escaped && string(m.key) == "managedFields" {
			at, end, before = m.at, m.valueEnd, last
		}
		last = m.valueEnd
		return true
	})
	switch {
	case at < 0:
		return nil, false
	case next >= 0:
		end = next
	case before >= 0:
		at = before
	}
	out := make([]byte, 0, len(b)-(end-at))
	return append(append(out, b[:at]...), b[end:]...), true
}
