package patch

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"time"
	"unicode/utf8"
)

// Managed-fields operations.
const (
	OperationApply  = "Apply"
	OperationUpdate = "Update"
)

// entry is one metadata.managedFields entry.
type entry struct {
	manager, operation, apiVersion, subresource string
	time                                        string
	set                                         *Set
}

// id is kube's manager identifier: appliers are one manager whatever
// apiVersion they apply in; updaters are one per apiVersion.
func (e *entry) id() string {
	v := e.apiVersion
	if e.operation == OperationApply {
		v = ""
	}
	return e.manager + "\x00" + e.operation + "\x00" + v + "\x00" + e.subresource
}

func (e *entry) encode() map[string]any { return e.encodeFields(e.set.FieldsV1()) }

// encodeFields is encode with the set already in FieldsV1 form.
func (e *entry) encodeFields(fieldsV1 map[string]any) map[string]any {
	m := map[string]any{
		"manager": e.manager, "operation": e.operation, "apiVersion": e.apiVersion,
		"fieldsType": "FieldsV1", "fieldsV1": fieldsV1,
	}
	if e.time != "" {
		m["time"] = e.time
	}
	if e.subresource != "" {
		m["subresource"] = e.subresource
	}
	return m
}

// decodeEntries reads metadata.managedFields.
func decodeEntries(v any) ([]*entry, error) {
	out, ok := decodePlainEntries(v)
	if !ok {
		var err error
		if out, err = decodeEntriesJSON(v); err != nil {
			return nil, err
		}
	}
	return out, checkEntries(out)
}

// CheckManagedFields says why metadata.managedFields v do not decode as
// kube's decoding would; nil when they do or are absent.
func CheckManagedFields(v any) error {
	if v == nil {
		return nil
	}
	_, err := decodeEntries(v)
	return err
}

// checkEntries refuses what kube's decoding of managedFields refuses and a
// client could otherwise store: a time that is not RFC 3339 (client-go and
// our protobuf encoder could not read the object back, nor any list
// holding it), and two entries of one manager, operation and subresource
// (kube keys them so; a later apply would update one and keep the other).
func checkEntries(entries []*entry) error {
	type key struct{ manager, operation, subresource string }
	seen := make(map[key]bool, len(entries))
	for i, e := range entries {
		if e.time != "" {
			if _, err := time.Parse(time.RFC3339, e.time); err != nil {
				return fmt.Errorf("metadata.managedFields[%d].time: %q is not an RFC 3339 time", i, e.time)
			}
		}
		k := key{e.manager, e.operation, e.subresource}
		if seen[k] {
			return fmt.Errorf("metadata.managedFields[%d]: a second entry of manager %q, operation %s", i, e.manager, e.operation)
		}
		seen[k] = true
	}
	return nil
}

// decodePlainEntries is decodeEntries without its JSON round trip, for
// the entries every write stores: each a map of exactly those members
// (encoding/json would match others by case), their strings valid UTF-8
// (which the round trip would change) and well-formed. ok is false for
// anything else, left to decodeEntriesJSON, which gives the same entries
// or the error.
func decodePlainEntries(v any) (out []*entry, ok bool) {
	if v == nil {
		return []*entry{}, true
	}
	l, isList := v.([]any)
	if !isList {
		return nil, false
	}
	out = make([]*entry, 0, len(l))
	for _, item := range l {
		m, isMap := item.(map[string]any)
		if !isMap {
			return nil, false
		}
		e := &entry{}
		var fieldsType string
		for k, v := range m {
			var field *string
			switch k {
			case "manager":
				field = &e.manager
			case "operation":
				field = &e.operation
			case "apiVersion":
				field = &e.apiVersion
			case "time":
				field = &e.time
			case "fieldsType":
				field = &fieldsType
			case "subresource":
				field = &e.subresource
			case "fieldsV1":
				continue
			default:
				return nil, false
			}
			str, isString := v.(string)
			if !isString || !utf8.ValidString(str) {
				return nil, false
			}
			*field = str
		}
		if (e.operation != OperationApply && e.operation != OperationUpdate) || fieldsType != "FieldsV1" {
			return nil, false
		}
		var err error
		if e.set, err = parseFieldsV1(m["fieldsV1"], true); err != nil {
			return nil, false
		}
		out = append(out, e)
	}
	return out, true
}

// decodeEntriesJSON is decodeEntries through encoding/json: its matching
// of members, its errors.
func decodeEntriesJSON(v any) ([]*entry, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	var raw []struct {
		Manager     string `json:"manager"`
		Operation   string `json:"operation"`
		APIVersion  string `json:"apiVersion"`
		Time        string `json:"time"`
		FieldsType  string `json:"fieldsType"`
		FieldsV1    any    `json:"fieldsV1"`
		Subresource string `json:"subresource"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return nil, fmt.Errorf("metadata.managedFields: %w", err)
	}
	out := make([]*entry, 0, len(raw))
	for i, r := range raw {
		if r.Operation != OperationApply && r.Operation != OperationUpdate {
			return nil, fmt.Errorf("metadata.managedFields[%d].operation: must be Apply or Update, not %q", i, r.Operation)
		}
		if r.FieldsType != "FieldsV1" {
			return nil, fmt.Errorf("metadata.managedFields[%d].fieldsType: must be FieldsV1, not %q", i, r.FieldsType)
		}
		set, err := ParseFieldsV1(r.FieldsV1)
		if err != nil {
			return nil, fmt.Errorf("metadata.managedFields[%d].fieldsV1: %w", i, err)
		}
		out = append(out, &entry{r.Manager, r.Operation, r.APIVersion, r.Subresource, r.Time, set})
	}
	return out, nil
}

// encodeEntries writes entries in kube's order: Apply before Update, then
// by time, manager, apiVersion and subresource; empty ones are dropped.
func encodeEntries(entries []*entry) []any {
	sorted := slices.Clone(entries)
	slices.SortStableFunc(sorted, func(a, b *entry) int {
		return cmp.Or(cmp.Compare(a.operation, b.operation), cmp.Compare(a.time, b.time),
			cmp.Compare(a.manager, b.manager), cmp.Compare(a.apiVersion, b.apiVersion),
			cmp.Compare(a.subresource, b.subresource))
	})
	out := make([]any, 0, len(sorted))
	for _, e := range sorted {
		if !e.set.empty() {
			out = append(out, e.encode())
		}
	}
	return out
}

// Manager is one writer of an object, as its managedFields entries name it.
type Manager struct {
	// Name is the field manager (?fieldManager, or the User-Agent's first part).
	Name string
	// APIVersion is the apiVersion written in.
	APIVersion string
	// Subresource is "status" for writes to the status subresource.
	Subresource string
	// Reset are the paths of the fields the write never owns, kube's
	// reset fields of the strategy serving it: status for a resource with
	// a status subresource; spec, and the metadata its strategy keeps,
	// for its status.
	Reset [][]string
	// Only, when set, are the patterns of the only fields the write may
	// own, "*" matching any field, key or item: kube's include filter of
	// a part (a pod's resize owns its containers' resources and resize
	// policies alone).
	Only [][]string
	// Schema says how lists merge and which fields are members.
	Schema *Schema
	// Now is the time of the write.
	Now time.Time
}

func (m Manager) entry(op string) *entry {
	return &entry{manager: m.Name, operation: op, apiVersion: m.APIVersion, subresource: m.Subresource}
}

func (m Manager) timestamp() string { return m.Now.UTC().Format(time.RFC3339) }

// serverOwned are the fields kube keeps out of every field set.
var serverOwned = []string{"name", "namespace", "creationTimestamp", "selfLink", "uid", "generation",
	"managedFields", "resourceVersion", "deletionTimestamp", "deletionGracePeriodSeconds"}

// scoped is obj without the fields no manager owns through this write.
func (m Manager) scoped(obj map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range obj {
		if k == "apiVersion" || k == "kind" {
			continue
		}
		out[k] = v
	}
	for _, p := range m.Reset {
		out = withoutPath(out, p)
	}
	if md, ok := out["metadata"].(map[string]any); ok {
		md = maps.Clone(md)
		for _, f := range serverOwned {
			delete(md, f)
		}
		out["metadata"] = md
	}
	return out
}

// withoutPath is obj less the field at path p, the maps along it copied.
func withoutPath(obj map[string]any, p []string) map[string]any {
	v, ok := obj[p[0]]
	child, isMap := v.(map[string]any)
	if !ok || len(p) > 1 && !isMap {
		return obj
	}
	out := maps.Clone(obj)
	if len(p) == 1 {
		delete(out, p[0])
	} else {
		out[p[0]] = withoutPath(child, p[1:])
	}
	return out
}

// resets says whether the write owns none of the top-level field k
// (whole), or only some of it (partly).
func (m Manager) resets(k string) (whole, partly bool) {
	for _, p := range m.Reset {
		if p[0] == k {
			if len(p) == 1 {
				return true, false
			}
			partly = true
		}
	}
	return false, partly
}

// only is s less the members no pattern of m.Only covers, or s when
// m.Only is empty.
func (m Manager) only(s *Set) *Set {
	if len(m.Only) == 0 {
		return s
	}
	var out *Set
	for _, p := range m.Only {
		out = union(out, s.under(p))
	}
	return out
}

// under is the part of s at the paths pattern p matches, below them, and
// the members on their way.
func (s *Set) under(p []string) *Set {
	if len(p) == 0 || s == nil {
		return s
	}
	out := &Set{}
	for pe, c := range s.children {
		if p[0] != "*" && pe != "f:"+p[0] {
			continue
		}
		// As kube's FilterIncludeMatches: a member on the pattern's way
		// stays one.
		sub := &Set{member: c.member, children: c.under(p[1:]).children}
		if !sub.empty() {
			out.ensure(pe)
			out.children[pe] = sub
		}
	}
	return out
}

// withoutMetadataNode drops the "metadata" node itself from a set, as
// kube does: it always exists and is nobody's.
func withoutMetadataNode(s *Set) *Set { return difference(s, metadataNode) }

// metadataNode is the set of the "metadata" node alone (never changed:
// no operation changes its operands).
var metadataNode = &Set{children: map[string]*Set{"f:metadata": {member: true}}}

// managedOf returns the entries a write of obj over live starts from, as
// kube's decodeLiveOrNew: the ones the client sent, if it sent some that
// decode, else live's (none if those do not decode either); a write to a
// subresource cannot set them. reset is true when the client cleared them.
func (m Manager) managedOf(live, obj map[string]any) (entries []*entry, reset bool) {
	if objMF := metadataOf(obj)["managedFields"]; m.Subresource == "" {
		if isReset(objMF) {
			return nil, true
		}
		if entries, err := decodeEntries(objMF); err == nil && len(entries) > 0 {
			return entries, false
		}
	}
	entries, err := decodeEntries(metadataOf(live)["managedFields"])
	if err != nil {
		return nil, false
	}
	return entries, false
}

// entryMembers are the members of a managedFields entry.
var entryMembers = []string{"manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"}

// isReset reports whether managedFields v clear them, as kube's
// isResetManagedFields: an empty list, or one entry that sets nothing.
func isReset(v any) bool {
	l, isList := v.([]any)
	if !isList || len(l) > 1 {
		return false
	}
	if len(l) == 0 {
		return true
	}
	e, isMap := l[0].(map[string]any)
	if !isMap {
		return false
	}
	for k, v := range e {
		if slices.Contains(entryMembers, k) && v != nil && v != "" {
			return false
		}
	}
	return true
}

func metadataOf(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	return md
}

// setManaged writes entries into obj's metadata.
func setManaged(obj map[string]any, entries []*entry) {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		md = map[string]any{}
		obj["metadata"] = md
	}
	if enc := encodeEntries(entries); len(enc) > 0 {
		md["managedFields"] = enc
	} else {
		delete(md, "managedFields")
	}
}

// Update records a non-apply write (create, update, patch) of next over
// live (nil for a create) in next's metadata.managedFields: the fields it
// changed become m's, taken from whoever owned them, and removed fields
// are nobody's. managedFields the client sets are taken as given when
// they decode, and ignored when not; [] or [{}] clears them (and then an
// update records nothing, as kube).
func (m Manager) Update(live, next map[string]any) {
	if _, set := metadataOf(next)["managedFields"]; live == nil && !set {
		m.created(next)
		return
	}
	m.update(live, next)
}

// created is Update for a create whose client set no managedFields, the
// common one: every field obj sets is m's, and there is no one else's to
// take from. It writes the FieldsV1 of what update computes as
// withoutMetadataNode(compare(nil, scoped(obj)).added) straight from obj,
// without building sets (an object whose lists repeat a key goes the long
// way, where the repeats' fields are merged, as does a metadata that is
// not a map).
func (m Manager) created(obj map[string]any) {
	mine := m.entry(OperationUpdate)
	mine.time = m.timestamp()
	fields, ok := m.createdFields(obj)
	if !ok {
		mine.set = withoutMetadataNode(compare(nil, m.scoped(obj), m.Schema).added)
		setManaged(obj, []*entry{mine})
		return
	}
	md, isMap := obj["metadata"].(map[string]any)
	if !isMap {
		md = map[string]any{}
		obj["metadata"] = md
	}
	if len(fields) == 0 {
		delete(md, "managedFields")
		return
	}
	md["managedFields"] = []any{mine.encodeFields(fields)}
}

// createdFields is the FieldsV1 of the fields m owns in a new obj (see
// created), skipping what scoped drops; ok is false for the long way.
func (m Manager) createdFields(obj map[string]any) (fields map[string]any, ok bool) {
	fields = map[string]any{}
	for k, v := range obj {
		whole, partly := m.resets(k)
		if k == "apiVersion" || k == "kind" || whole {
			continue
		}
		if partly {
			return nil, false
		}
		s := m.Schema.field(k)
		md, isMap := v.(map[string]any)
		if k == "metadata" && !isMap {
			return nil, false
		}
		if k != "metadata" {
			if fields["f:"+k], ok = addedFields(v, s); !ok {
				return nil, false
			}
			continue
		}
		// The metadata node itself is nobody's: only its fields, if any.
		meta := map[string]any{}
		for f, fv := range md {
			if slices.Contains(serverOwned, f) {
				continue
			}
			if meta["f:"+f], ok = addedFields(fv, s.field(f)); !ok {
				return nil, false
			}
		}
		if len(meta) > 0 {
			fields["f:metadata"] = meta
		}
	}
	return fields, true
}

// addedFields is the FieldsV1 node of a value compare finds added: a leaf,
// or a container with "." and its members' nodes.
func addedFields(v any, s *Schema) (map[string]any, bool) {
	out := map[string]any{}
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			var ok bool
			if out["f:"+k], ok = addedFields(e, s.field(k)); !ok {
				return nil, false
			}
		}
	case []any:
		if !granularItems(nil, s) || !granularItems(v, s) {
			return out, true
		}
		for _, it := range v {
			pe, _ := itemElement(it, s)
			if _, repeated := out[pe]; repeated {
				return nil, false
			}
			var ok bool
			if out[pe], ok = addedFields(it, s.elem()); !ok {
				return nil, false
			}
		}
	default:
		return out, true
	}
	if len(out) > 0 {
		out["."] = map[string]any{}
	}
	return out, true
}

func (m Manager) update(live, next map[string]any) {
	entries, reset := m.managedOf(live, next)
	if reset && live != nil {
		delete(metadataOf(next), "managedFields")
		return
	}
	c := compare(m.scoped(live), m.scoped(next), m.Schema)
	changed := m.only(withoutMetadataNode(union(c.added, c.modified)))
	removed := m.only(withoutMetadataNode(c.removed))
	mine := m.entry(OperationUpdate)
	entries, previous := take(entries, mine.id())
	for _, e := range entries {
		e.set = difference(difference(e.set, changed), removed)
	}
	mine.set = union(difference(previous.set, removed), changed)
	mine.time = previous.time
	if !sameFieldsV1(mine.set, previous.set) || mine.time == "" {
		mine.time = m.timestamp()
	}
	setManaged(next, append(entries, mine))
}

// take removes the entry with id from entries and returns it (an empty one
// if there was none).
func take(entries []*entry, id string) ([]*entry, *entry) {
	for i, e := range entries {
		if e.id() == id {
			return append(slices.Clone(entries[:i]), entries[i+1:]...), e
		}
	}
	return entries, &entry{}
}
