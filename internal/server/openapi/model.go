package openapi

import (
	"strings"

	"github.com/listwatch/listwatch/internal/server/patch"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// pathItem is one API path and its operations, independent of the OpenAPI
// version they are written in.
type pathItem struct {
	path   string
	params []param // path-level parameters
	ops    []operation
}

// renderPaths renders the paths of rs in one OpenAPI version, with that
// version's renderings of parameters and operations, and collects the
// schemas they reference.
func renderPaths(rs []*resource.Resource, renderParams func([]param) []any, renderOp func(operation) map[string]any) (map[string]any, *schemaSet) {
	schemas := newSchemaSet()
	paths := map[string]any{}
	for _, r := range rs {
		schemas.addResource(r)
		for _, p := range resourcePaths(r) {
			item := map[string]any{"parameters": renderParams(p.params)}
			for _, op := range p.ops {
				item[op.method] = renderOp(op)
			}
			paths[p.path] = item
		}
	}
	return paths, schemas
}

// operation is one method on a path.
type operation struct {
	method   string // lower case: get, post, put, patch, delete
	action   string // x-kubernetes-action
	id       string
	desc     string
	params   []param
	body     string   // definition name of the request body; "" for none
	consumes []string // request media types; nil means "*/*"
	response string   // definition name of the response
	codes    []string // success status codes
	group    string
	version  string
	kind     string
	tag      string
}

// commonFields returns the fields of op's rendering that both OpenAPI
// versions write alike.
func (op operation) commonFields() map[string]any {
	return map[string]any{
		"tags":                            []any{op.tag},
		"description":                     op.desc,
		"operationId":                     op.id,
		"x-kubernetes-action":             op.action,
		"x-kubernetes-group-version-kind": map[string]any{"group": op.group, "version": op.version, "kind": op.kind},
	}
}

// accepts returns the media types op's request body may have.
func (op operation) accepts() []string {
	if op.consumes == nil {
		return []string{"*/*"}
	}
	return op.consumes
}

// param is one path or query parameter.
type param struct {
	name, in, typ, desc string
}

// Parameters kube documents on its operations, with its descriptions
// (k8s.io/apimachinery meta/v1 types.go), shortened.
var (
	pName      = param{"name", "path", "string", "name of the object"}
	pNamespace = param{"namespace", "path", "string", "object name and auth scope, such as for teams and projects"}
	pPretty    = param{"pretty", "query", "string", "If 'true', then the output is pretty printed."}

	listParams = []param{
		{"allowWatchBookmarks", "query", "boolean", "allowWatchBookmarks requests watch events with type \"BOOKMARK\"."},
		{"continue", "query", "string", "The continue option should be set when retrieving more results from the server."},
		{"fieldSelector", "query", "string", "A selector to restrict the list of returned objects by their fields. Defaults to everything."},
		{"labelSelector", "query", "string", "A selector to restrict the list of returned objects by their labels. Defaults to everything."},
		{"limit", "query", "integer", "limit is a maximum number of responses to return for a list call."},
		{"resourceVersion", "query", "string", "resourceVersion sets a constraint on what resource versions a request may be served from."},
		{"resourceVersionMatch", "query", "string", "resourceVersionMatch determines how resourceVersion is applied to list calls."},
		{"sendInitialEvents", "query", "boolean", "`sendInitialEvents=true` may be set together with `watch=true`."},
		{"timeoutSeconds", "query", "integer", "Timeout for the list/watch call."},
		{"watch", "query", "boolean", "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications."},
	}
	pFieldManager    = param{"fieldManager", "query", "string", "fieldManager is a name associated with the actor or entity that is making these changes."}
	pFieldValidation = param{"fieldValidation", "query", "string", "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: Ignore, Warn, Strict."}
	pForce           = param{"force", "query", "boolean", "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people."}
	pDryRun          = param{"dryRun", "query", "string", "When present, indicates that modifications should not be persisted. Valid values are: - All: all dry run stages will be processed"}
	deleteParams     = []param{
		pDryRun,
		{"gracePeriodSeconds", "query", "integer", "The duration in seconds before the object should be deleted."},
		{"orphanDependents", "query", "boolean", "Deprecated: please use the PropagationPolicy."},
		{"propagationPolicy", "query", "string", "Whether and how garbage collection will be performed."},
	}
)

// resourcePaths returns the paths kube serves for a resource: the collection, the
// object, its status and, for a namespaced resource, the list across
// namespaces.
func resourcePaths(r *resource.Resource) []pathItem {
	base := "/api/" + r.Version
	if r.Group != "" {
		base = "/apis/" + r.Group + "/" + r.Version
	}
	n := names{r: r, gv: gvWord(r.Group, r.Version), write: writeParams(r)}
	collection, scopeParams := base+"/"+r.Plural, []param{pPretty}
	if r.Namespaced {
		n.scope = "Namespaced"
		collection = base + "/namespaces/{namespace}/" + r.Plural
		scopeParams = []param{pNamespace, pPretty}
	}
	if r.CreateOnly {
		// kube's access reviews: one POST, answered 201 with the object.
		create := n.op("post", "post", "create"+n.gv+n.scope+r.Kind, "create a "+r.Kind, defName(r), defName(r), n.write)
		return []pathItem{{path: collection, params: scopeParams, ops: []operation{create}}}
	}
	object := collection + "/{name}"
	objectParams := append([]param{pName}, scopeParams...)
	out := []pathItem{
		{path: collection, params: scopeParams, ops: n.collectionOps()},
		{path: object, params: objectParams, ops: n.objectOps("", defName(r))},
	}
	if r.StatusSubresource {
		out = append(out, pathItem{path: object + "/status", params: objectParams, ops: n.objectOps("Status", defName(r))})
	}
	if r.Scale != nil {
		out = append(out, pathItem{path: object + "/scale", params: objectParams, ops: n.objectOps("Scale", resource.ScaleName)})
	}
	if r.Namespaced {
		all := names{r: r, gv: n.gv, write: n.write}
		out = append(out, pathItem{path: base + "/" + r.Plural, params: []param{pPretty}, ops: []operation{
			all.op("get", "list", "list"+all.gv+r.Kind+"ForAllNamespaces", listDesc(r), "", listName(r), concat(listParams)),
		}})
	}
	return out
}

// names builds a resource's operations, named as kube names them
// (listCoreV1NamespacedConfigMap).
type names struct {
	r     *resource.Resource
	gv    string // CoreV1
	scope string // "Namespaced" or ""
	write []param
}

// writeParams are the query parameters of create, replace and patch.
// fieldValidation is documented only where the server reports unknown
// fields: on resources it prunes by a schema (the built-in kinds and custom
// resources with a schema). Where it is missing, kubectl validates objects
// itself against /openapi/v2 (QueryParamVerifierV3 in k8s.io/cli-runtime).
func writeParams(r *resource.Resource) []param {
	if r.PruneAndDefault != nil {
		return []param{pDryRun, pFieldManager, pFieldValidation}
	}
	return []param{pDryRun, pFieldManager}
}

func (n names) op(method, action, id, desc, body, response string, params []param) operation {
	codes := []string{"200"}
	switch action {
	case "post":
		codes = []string{"200", "201", "202"}
	case "put":
		codes = []string{"200", "201"}
	case "patch":
		codes = []string{"200", "201"}
	case "delete":
		codes = []string{"200", "202"}
	}
	op := operation{
		method: method, action: action, id: id, desc: desc, params: params, body: body, response: response, codes: codes,
		group: n.r.Group, version: n.r.Version, kind: n.r.Kind, tag: tagOf(n.r.Group, n.r.Version),
	}
	if n.r.Owner != "" {
		op.consumes = crdBodyTypes // patches set their own
	}
	return op
}

func (n names) collectionOps() []operation {
	r, kind := n.r, n.scope+n.r.Kind
	return []operation{
		n.op("get", "list", "list"+n.gv+kind, listDesc(r), "", listName(r), concat(listParams)),
		n.op("post", "post", "create"+n.gv+kind, "create a "+r.Kind, defName(r), defName(r), n.write),
		n.op("delete", "deletecollection", "delete"+n.gv+"Collection"+kind, "delete collection of "+r.Kind, resource.DeleteOptsName, resource.StatusName,
			concat(listParams[:len(listParams)-1], deleteParams)),
	}
}

// objectOps are the operations on one object, or on its subresource sub
// ("Status", "Scale"), whose requests and answers are def.
func (n names) objectOps(sub, def string) []operation {
	r, kind := n.r, n.scope+n.r.Kind+sub
	what := "the specified " + r.Kind
	if sub != "" {
		what = strings.ToLower(sub) + " of " + what
	}
	p := n.op("patch", "patch", "patch"+n.gv+kind, "partially update "+what, resource.PatchName, def, concat(n.write, []param{pForce}))
	p.consumes = patch.Types(r.StrategicMerge)
	ops := []operation{
		n.op("get", "get", "read"+n.gv+kind, "read "+what, "", def, nil),
		n.op("put", "put", "replace"+n.gv+kind, "replace "+what, def, def, n.write),
		p,
	}
	if sub == "" {
		ops = append(ops, n.op("delete", "delete", "delete"+n.gv+kind, "delete a "+r.Kind, resource.DeleteOptsName, resource.StatusName, concat(deleteParams)))
	}
	return ops
}

// listDesc describes a list operation as kube does: its CRD OpenAPI
// builder leaves out the watch.
func listDesc(r *resource.Resource) string {
	if r.Owner != "" {
		return "list objects of kind " + r.Kind
	}
	return "list or watch objects of kind " + r.Kind
}

// crdBodyTypes are the request media types kube's CRD OpenAPI builder
// documents on a custom resource's operations other than patch.
var crdBodyTypes = []string{"application/json", "application/yaml"}

func concat(lists ...[]param) []param {
	var out []param
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

func defName(r *resource.Resource) string { return resource.DefinitionName(r.Group, r.Version, r.Kind) }

func listName(r *resource.Resource) string {
	return resource.DefinitionName(r.Group, r.Version, r.ListKind)
}

// groupWords are the words of a group's name as kube uses them in operation
// ids and tags: the first label of a *.k8s.io group, every label otherwise.
func groupWords(group string) []string {
	if group == "" {
		return []string{"core"}
	}
	if first, _, ok := strings.Cut(group, "."); ok && strings.HasSuffix(group, ".k8s.io") {
		return []string{first}
	}
	return strings.Split(group, ".")
}

// gvWord is "CoreV1", "ApiextensionsV1", "StableExampleComV1".
func gvWord(group, version string) string {
	var b strings.Builder
	for _, w := range append(groupWords(group), version) {
		b.WriteString(title(w))
	}
	return b.String()
}

// tagOf is "core_v1", "apiextensions_v1", "stableExampleCom_v1".
func tagOf(group, version string) string {
	words := groupWords(group)
	var b strings.Builder
	b.WriteString(words[0])
	for _, w := range words[1:] {
		b.WriteString(title(w))
	}
	return b.String() + "_" + version
}

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}
