package crd

import (
	"slices"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// Install gives the built-in customresourcedefinitions resource what makes
// definitions work: validation (names checked against catalog, the API
// approval of protected groups, and on update the fields kube holds
// immutable) and a
// Prepare that defaults names and conversion and sets the status kube's
// controllers set, so that `kubectl wait --for=condition=Established` is
// satisfied by the create response itself. Call it before serving.
func Install(definitions *resource.Resource, catalog *resource.Catalog) {
	definitions.Validate = validator{catalog}.validate
	definitions.ValidateCreate = validateCreate
	definitions.ValidateUpdate = validateUpdate
	definitions.Prepare = prepare
}

// prepare defaults a definition and sets its status. On update the status is
// the stored one (or, through the status subresource, the client's), whose
// storedVersions and condition times are kept.
func prepare(obj, _ api.Object) {
	spec, _ := obj["spec"].(map[string]any)
	if spec == nil {
		return
	}
	if n, ok := spec["names"].(map[string]any); ok {
		defaultName(n, "singular", func(d names) string { return d.Singular })
		defaultName(n, "listKind", func(d names) string { return d.ListKind })
	}
	if _, ok := spec["conversion"]; !ok {
		spec["conversion"] = map[string]any{"strategy": "None"}
	}
	d, err := decode(obj)
	if err != nil {
		return // validation reports it
	}
	prev, _ := obj["status"].(map[string]any)
	obj["status"] = status(d, prev, time.Now())
}

// defaultName sets names[field] from kube's defaults when it is empty.
func defaultName(n map[string]any, field string, get func(names) string) {
	if s, _ := n[field].(string); s != "" {
		return
	}
	kind, _ := n["kind"].(string)
	if v := get(names{Kind: kind}.withDefaults()); v != "" {
		n[field] = v
	}
}

// status is a definition's status as kube's controllers leave it once the
// names are accepted and the resource is served.
func status(d *definition, prev map[string]any, now time.Time) map[string]any {
	stored := stringsOf(prev["storedVersions"])
	if sv := d.storageVersion(); sv != nil && !slices.Contains(stored, sv.Name) {
		stored = append(stored, sv.Name)
	}
	prevConds, _ := prev["conditions"].([]any)
	at := now.UTC().Format(time.RFC3339)
	conds := []any{
		condition(prevConds, "NamesAccepted", "True", "NoConflicts", "no conflicts found", at),
		condition(prevConds, "Established", "True", "InitialNamesAccepted", "the initial names have been accepted", at),
	}
	if c := approvalCondition(d, prevConds, at); c != nil {
		conds = append(conds, c)
	}
	return map[string]any{
		"acceptedNames":  d.Spec.Names.object(),
		"storedVersions": api.StringList(stored),
		"conditions":     conds,
	}
}

// condition is a condition with status, keeping its lastTransitionTime if
// it already had that status (kube's SetCRDCondition).
func condition(prev []any, typ, status, reason, message, now string) map[string]any {
	c := map[string]any{"type": typ, "status": status, "lastTransitionTime": now, "reason": reason, "message": message}
	for _, p := range prev {
		pm, _ := p.(map[string]any)
		if pm["type"] == typ && pm["status"] == status && pm["lastTransitionTime"] != nil {
			c["lastTransitionTime"] = pm["lastTransitionTime"]
		}
	}
	return c
}

// object returns the names as a decoded JSON object.
func (n names) object() map[string]any {
	m := map[string]any{"plural": n.Plural, "singular": n.Singular, "kind": n.Kind, "listKind": n.ListKind}
	if len(n.ShortNames) > 0 {
		m["shortNames"] = api.StringList(n.ShortNames)
	}
	if len(n.Categories) > 0 {
		m["categories"] = api.StringList(n.Categories)
	}
	return m
}

func stringsOf(v any) []string {
	list, _ := v.([]any)
	var out []string
	for _, e := range list {
		if s, ok := e.(string); ok {
			out = append(out, s)
		}
	}
	return out
}
