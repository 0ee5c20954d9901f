package crd

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// dns1035Label is kube's IsDNS1035Label pattern, which names must match.
var dns1035Label = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)

const dns1035Message = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"

// Supported values, as kube lists them in its messages.
var (
	scopes        = []string{"Cluster", "Namespaced"}
	columnTypes   = []string{"boolean", "date", "integer", "number", "string"}
	columnFormats = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
)

// validator checks CustomResourceDefinitions, names against the catalogue.
type validator struct{ catalog *resource.Catalog }

// validate is the definition resource's Validate: spec, names, versions,
// schemas and columns, and names taken by other resources of the group.
func (v validator) validate(obj api.Object) []api.StatusCause {
	d, err := decode(obj)
	if err != nil {
		return []api.StatusCause{apierror.Field(api.CauseTypeFieldValueInvalid, "spec", "Invalid value: "+err.Error())}
	}
	var c checker
	c.definitionName(d)
	c.group(d.Spec.Group)
	c.names(d.Spec.Names)
	c.oneOf("spec.scope", d.Spec.Scope, scopes)
	c.versions(d.Spec.Versions)
	c.conversion(obj, d.Spec.Conversion)
	if len(c.causes) == 0 {
		c.conflicts(d, v.catalog.All())
	}
	return c.causes
}

// validateUpdate is the definition resource's ValidateUpdate: as kube's
// ValidateCustomResourceDefinitionUpdate, a definition that was established
// keeps its scope and kind, which its stored objects depend on (its group
// and plural, fixed by its name, never change).
// The API approval of a protected group is checked as on create, unless
// its state did not change.
func validateUpdate(_ context.Context, obj, old api.Object) []api.StatusCause {
	d, err := decode(obj)
	if err != nil {
		return nil // validate reports it
	}
	prev, err := decode(old)
	if err != nil {
		return nil // a stored definition that does not decode holds nothing to keep
	}
	var c checker
	if established(old) {
		c.immutable("spec.scope", d.Spec.Scope, prev.Spec.Scope)
		c.immutable("spec.names.kind", d.Spec.Names.Kind, prev.Spec.Names.Kind)
	}
	c.checkApproval(d, prev)
	return c.causes
}

// validateCreate is the definition resource's ValidateCreate: the API
// approval of a protected group.
func validateCreate(_ context.Context, obj api.Object) []api.StatusCause {
	d, err := decode(obj)
	if err != nil {
		return nil // validate reports it
	}
	var c checker
	c.checkApproval(d, nil)
	return c.causes
}

// established reports whether a definition's Established condition is True.
func established(obj api.Object) bool {
	st, _ := obj["status"].(map[string]any)
	conds, _ := st["conditions"].([]any)
	for _, c := range conds {
		if cm, _ := c.(map[string]any); cm["type"] == "Established" {
			return cm["status"] == "True"
		}
	}
	return false
}

// immutable adds kube's ValidateImmutableField cause when value changed.
func (c *checker) immutable(path, value, old string) {
	if value != old {
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %q: field is immutable", value))
	}
}

// required adds "Required value" for an empty value and reports whether it did.
func (c *checker) required(path, value string) bool {
	if value == "" {
		c.add(api.CauseTypeFieldValueRequired, path, "Required value")
		return true
	}
	return false
}

func (c *checker) definitionName(d *definition) {
	want := d.Spec.Names.Plural + "." + d.Spec.Group
	if d.Metadata.Name != want {
		c.add(api.CauseTypeFieldValueInvalid, "metadata.name", fmt.Sprintf(`Invalid value: %q: must be spec.names.plural+"."+spec.group`, d.Metadata.Name))
	}
}

func (c *checker) group(g string) {
	if c.required("spec.group", g) {
		return
	}
	if !strings.Contains(g, ".") {
		c.add(api.CauseTypeFieldValueInvalid, "spec.group", fmt.Sprintf("Invalid value: %q: should be a domain with at least one dot", g))
	}
}

func (c *checker) names(n names) {
	c.label("spec.names.plural", n.Plural)
	c.label("spec.names.singular", n.Singular)
	if !c.required("spec.names.kind", n.Kind) && !dns1035Label.MatchString(strings.ToLower(n.Kind)) {
		c.add(api.CauseTypeFieldValueInvalid, "spec.names.kind", fmt.Sprintf("Invalid value: %q: may have mixed case, but should otherwise match: %s", n.Kind, dns1035Message))
	}
	if !c.required("spec.names.listKind", n.ListKind) && n.ListKind == n.Kind {
		c.add(api.CauseTypeFieldValueInvalid, "spec.names.listKind", fmt.Sprintf("Invalid value: %q: kind and listKind may not be the same", n.ListKind))
	}
	for i, s := range n.ShortNames {
		c.label(fmt.Sprintf("spec.names.shortNames[%d]", i), s)
	}
	for i, s := range n.Categories {
		c.label(fmt.Sprintf("spec.names.categories[%d]", i), s)
	}
}

// label requires a lowercase DNS-1035 label.
func (c *checker) label(path, s string) {
	if !c.required(path, s) && (len(s) > 63 || !dns1035Label.MatchString(s)) {
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %q: %s", s, dns1035Message))
	}
}

func (c *checker) oneOf(path, value string, supported []string) {
	if c.required(path, value) || slices.Contains(supported, value) {
		return
	}
	quoted := make([]string, len(supported))
	for i, s := range supported {
		quoted[i] = strconv.Quote(s)
	}
	c.add(api.CauseTypeFieldValueNotSupported, path, fmt.Sprintf("Unsupported value: %q: supported values: %s", value, strings.Join(quoted, ", ")))
}

func (c *checker) versions(vs []version) {
	if len(vs) == 0 {
		c.add(api.CauseTypeFieldValueRequired, "spec.versions", "Required value: must have exactly one version marked as storage version")
		return
	}
	storage, seen, sh := 0, map[string]bool{}, sharedParts(vs)
	shared := sh.schema && vs[0].rawSchema() != nil
	if shared {
		// As kube's conversion, identical schemas are one, spec.validation,
		// checked as served with status if any version is.
		c.schema("spec.validation.openAPIV3Schema", &vs[0], slices.ContainsFunc(vs, func(v version) bool { return v.hasStatus() }))
	}
	for i := range vs {
		v := &vs[i]
		path := fmt.Sprintf("spec.versions[%d]", i)
		c.label(path+".name", v.Name)
		if seen[v.Name] {
			c.add(api.CauseTypeFieldValueDuplicate, path+".name", fmt.Sprintf("Duplicate value: %q", v.Name))
		}
		seen[v.Name] = true
		if v.Storage {
			storage++
		}
		if !shared {
			c.schema(path+".schema.openAPIV3Schema", v, v.hasStatus())
		}
		c.versionParts(path, v, sh)
		if !sh.columns {
			c.columns(path+".additionalPrinterColumns", v.AdditionalPrinterColumns)
		}
	}
	if storage != 1 {
		c.add(api.CauseTypeFieldValueInvalid, "spec.versions", fmt.Sprintf("Invalid value: %d storage versions: must have exactly one version marked as storage version", storage))
	}
	if sh.columns {
		c.columns("spec.additionalPrinterColumns", vs[0].AdditionalPrinterColumns)
	}
	c.specParts(&vs[0], sh)
}

// schema requires a structural openAPIV3Schema, as v1 definitions must
// have; with status, one whose root serves status on its own.
func (c *checker) schema(path string, v *version, status bool) {
	raw := v.rawSchema()
	if raw == nil {
		c.add(api.CauseTypeFieldValueRequired, path, "Required value: schemas are required")
		return
	}
	if status {
		c.statusRoot(raw, path)
	}
	s, err := ParseSchema(raw)
	if err != nil {
		fixed, elements, forbidden := c.itemArrays(raw, path)
		if fixed != nil {
			s, err = ParseSchema(fixed)
		}
		if err != nil {
			c.add(api.CauseTypeFieldValueInvalid, path, "Invalid value: "+err.Error())
			return
		}
		if forbidden {
			c.openAPIOnly(s, elements, path)
			return
		}
	}
	causes, structural := s.Structural(path)
	c.causes = append(c.causes, causes...)
	if !structural {
		return
	}
	// As kube, defaults are checked (with the rules) only against a
	// structural schema, and rules are reported only when the defaults pass.
	rules := s.compileRules(path)
	if defaults := s.checkDefaults(path); len(defaults) > 0 {
		c.causes = append(c.causes, defaults...)
	} else if len(causes) == 0 {
		c.causes = append(c.causes, rules...)
	}
}

// columns checks printer columns as kube's
// ValidateCustomResourceColumnDefinition, messages and the "JSONPath"
// field name included. kube asks of a path only that it start with a dot;
// one it cannot parse ends the columns it serves (see columns in
// resources.go).
func (c *checker) columns(path string, cols []printerColumn) {
	for i, col := range cols {
		p := fmt.Sprintf("%s[%d]", path, i)
		c.required(p+".name", col.Name)
		types := "must be one of " + strings.Join(columnTypes, ",")
		switch {
		case col.Type == "":
			c.add(api.CauseTypeFieldValueRequired, p+".type", "Required value: "+types)
		case !slices.Contains(columnTypes, col.Type):
			c.add(api.CauseTypeFieldValueInvalid, p+".type", fmt.Sprintf("Invalid value: %q: %s", col.Type, types))
		}
		if col.Format != "" && !slices.Contains(columnFormats, col.Format) {
			c.add(api.CauseTypeFieldValueInvalid, p+".format", fmt.Sprintf("Invalid value: %q: must be one of %s", col.Format, strings.Join(columnFormats, ",")))
		}
		if !c.required(p+".JSONPath", col.JSONPath) && col.JSONPath[0] != '.' {
			c.add(api.CauseTypeFieldValueInvalid, p+".JSONPath", fmt.Sprintf("Invalid value: %q: must be a simple json path starting with .", col.JSONPath))
		}
	}
}

// conflicts rejects names another resource of the group already uses, as
// kube's naming controller refuses them.
func (c *checker) conflicts(d *definition, served []*resource.Resource) {
	n := d.Spec.Names
	for _, r := range served {
		if r.Group != d.Spec.Group || r.Owner == d.Metadata.Name {
			continue
		}
		taken := append([]string{r.Plural, r.Singular}, r.ShortNames...)
		c.taken("spec.names.plural", n.Plural, taken)
		c.taken("spec.names.singular", n.Singular, taken)
		for i, s := range n.ShortNames {
			c.taken(fmt.Sprintf("spec.names.shortNames[%d]", i), s, taken)
		}
		c.taken("spec.names.kind", n.Kind, []string{r.Kind, r.ListKind})
		c.taken("spec.names.listKind", n.ListKind, []string{r.Kind, r.ListKind})
	}
}

func (c *checker) taken(path, name string, used []string) {
	if slices.Contains(used, name) && !slices.ContainsFunc(c.causes, func(sc api.StatusCause) bool { return sc.Field == path }) {
		c.add(api.CauseTypeFieldValueInvalid, path, fmt.Sprintf("Invalid value: %q: is already in use", name))
	}
}
