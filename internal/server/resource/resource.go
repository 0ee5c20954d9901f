// Package resource is the server's catalogue of the resources it serves: the
// built-in kinds and those defined by CustomResourceDefinitions. A Resource
// says how one group/version/plural is named, scoped, keyed in storage,
// validated and printed; the Catalog finds it from a request's path, from a
// kind or a short name, and tells discovery when the set changes.
package resource

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"strings"

	"github.com/listwatch/listwatch/client/api"
)

// Verbs every resource supports.
var Verbs = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}

// Resource describes one served group/version/resource.
type Resource struct {
	Group      string // "" for the core group
	Version    string
	Plural     string
	Singular   string
	Kind       string
	ListKind   string
	ShortNames []string
	Categories []string
	Namespaced bool
	// StorageVersionHash names the group/version/kind objects are stored
	// as, in discovery (StorageVersionHash): clients such as the storage
	// version migrator compare it to find objects to rewrite.
	StorageVersionHash string

	// Columns are the Table columns after Name, for kubectl's table output.
	Columns []Column
	// NameColumn says Columns place the name themselves (kube's events have
	// it last), so that Tables do not begin with it.
	NameColumn bool
	// FieldPaths are the field selector keys supported beyond
	// metadata.name and metadata.namespace, each the path of a scalar in
	// the object read as selector.FieldValue does (a missing or mistyped
	// one reads as ""), so that they can be read from an object's JSON
	// without decoding it.
	FieldPaths map[string][]string
	// FieldFallbacks name, for a field of FieldPaths that reads "", the
	// field whose value it takes instead; nil for most resources.
	FieldFallbacks map[string]string
	// FieldDefaults are, for a field of FieldPaths that reads "" (after its
	// fallback), the value it takes instead: kube prints an absent number
	// of some kinds as "0" and an absent bool as "false".
	FieldDefaults map[string]string
	// FieldLabelMessage is the format (one %s or %q, the label) of the
	// error for a field selector label not supported; "" means
	// "field label not supported: %s".
	FieldLabelMessage string
	// NoNamespaceField refuses metadata.namespace as a field selector of a
	// namespaced resource, as kube's conversion for a few kinds does.
	NoNamespaceField bool
	// NameRule checks object names in place of the DNS-1123 subdomain rule,
	// returning what is wrong with a name; nil means the subdomain rule.
	NameRule func(name string) []string
	// NameRuleOf, when set, gives the NameRule of the object written, for
	// kinds whose names depend on their content (a ClusterTrustBundle's on
	// its signer).
	NameRuleOf func(obj api.Object) func(name string) []string
	// Validate checks an object about to be written, after defaulting; nil
	// means no checks beyond metadata. Causes name the offending fields.
	Validate func(obj api.Object) []api.StatusCause
	// ValidateCreate checks a new object, after Validate; nil means no
	// rule for new objects only.
	ValidateCreate func(ctx context.Context, obj api.Object) []api.StatusCause
	// ValidateUpdate checks an update against the stored object old, after
	// Validate; nil means no rule ties an object's new state to its old one.
	ValidateUpdate func(ctx context.Context, obj, old api.Object) []api.StatusCause
	// ValidateStatusUpdate, when set, checks a write through the status
	// subresource in place of Validate, ValidateCreate and ValidateUpdate,
	// as kube's status strategies of built-in kinds check metadata and
	// status, not the spec; nil runs those three.
	ValidateStatusUpdate func(ctx context.Context, obj, old api.Object) []api.StatusCause
	// Unvalidated writes are stored without any of the checks above or
	// those of metadata, as kube's stores write what GuaranteedUpdate is
	// given raw (a pod's binding copies the Binding's labels and
	// annotations onto the pod unchecked); set on views, never on a
	// served resource.
	Unvalidated bool
	// Schema is the OpenAPI v3 schema of a custom resource's objects, as a
	// JSON document (what a CRD's openAPIV3Schema holds); nil for built-ins
	// and when unknown. The OpenAPI documents kubectl reads are built from
	// it or from Definition.
	Schema map[string]any
	// Definition names a built-in kind's schema among kube's published
	// definitions (Definitions); "" for custom resources.
	Definition string
	// PruneAndDefault drops the fields the resource's schema does not know
	// and applies its defaults, before Prepare and Validate, as kube's
	// decoder does for custom resources; it returns the dropped fields'
	// paths ("spec.foo"), which fieldValidation reports. Nil means no schema.
	PruneAndDefault func(obj api.Object) (unknown []string)
	// OmitEmpty drops, before a validated object is stored, the empty
	// fields a built-in kind's Go type omits (kube's typed encoding); nil
	// for custom resources.
	OmitEmpty func(obj api.Object)
	// Prepare sets fields the server owns before a write; old is the stored
	// object on update and nil on create. Nil means nothing to do.
	Prepare func(obj, old api.Object)
	// PrepareCreate sets, after Prepare, what a new object takes from the
	// request (a CSR records its requesting user); nil for most resources.
	PrepareCreate func(ctx context.Context, obj api.Object)
	// Allocate reserves, before an object is validated and written, what
	// it takes from pools beyond its own key (a Service's cluster IPs and
	// node ports), filling in the fields that name them, as kube's
	// BeginCreate and BeginUpdate hooks; old is the stored object on
	// update, nil on create. The write calls finish with whether it stored
	// the object. Nil for most resources.
	Allocate func(ctx context.Context, obj, old api.Object) (finish func(stored bool), err error)
	// Release frees what a deleted object held of Allocate's pools (kube's
	// AfterDelete); nil with Allocate.
	Release func(obj api.Object)
	// CreateOnUpdate lets a PUT create an object that does not exist, as
	// kube's strategies that AllowCreateOnUpdate (RBAC kinds, events) do.
	CreateOnUpdate bool
	// StrategicMerge is true for built-in kinds, which accept
	// application/strategic-merge-patch+json.
	StrategicMerge bool
	// StatusSubresource makes .status a subresource: writes to the main
	// resource leave it unchanged and it does not bump metadata.generation.
	StatusSubresource bool
	// StatusKeeps are the metadata fields a write through the status
	// subresource keeps from the stored object, taking the rest from the
	// request, as most of kube's built-in status strategies do (StatusWrite);
	// nil keeps all the stored metadata, as custom resources' does.
	StatusKeeps []string
	// Scale, when set, serves the scale subresource: an autoscaling/v1
	// Scale read from and written to the object at these paths (a custom
	// resource's subresources.scale).
	Scale *ScalePaths
	// Subresources are the resource's subresources other than status,
	// each with its own kind (serviceaccounts/token: TokenRequest).
	Subresources []Subresource
	// Reset are the paths of the fields writes to the resource itself
	// never own in managedFields (kube's GetResetFields), when more than
	// status (ResetFields).
	Reset [][]string
	// Parts are subresources that write a part of the object (get, update
	// and patch it as the resource's own kind); a "status" entry replaces
	// the status subresource's default (the written status, the rest as
	// stored, validated as the resource). Nil for most resources.
	Parts map[string]Part
	// NoDeleteCollection leaves deletecollection out of the verbs served,
	// as kube's namespace storage, which has no DeleteCollection.
	NoDeleteCollection bool
	// ReturnDeletedObject makes a DELETE answer the deleted object, as kube's
	// storage for the kind does (namespaces, serviceaccounts); otherwise it
	// answers a Status (Success, details naming the object).
	ReturnDeletedObject bool
	// Generation makes the server keep metadata.generation: 1 on create, +1
	// on every update that changes anything but metadata and status. As in
	// kube-apiserver, CustomResourceDefinitions and custom resources have
	// it; ConfigMaps, Secrets, Namespaces and Events do not.
	Generation bool
	// CreateOnly makes the resource's objects questions, never stored, as
	// kube's access reviews: create, served by the server's own handler
	// for the kind, answers the object with its status filled; no other
	// verb is served, nothing is watched or listed.
	CreateOnly bool
	// Owner names the CustomResourceDefinition that defines the resource;
	// empty for built-ins.
	Owner string
	// Storage is the Resource whose keys and form this one's objects are
	// stored in, when another: the stored version of the same CRD (objects
	// converted by apiVersion only), core/v1 events for events.k8s.io/v1, or
	// autoscaling/v2 HPAs for autoscaling/v1 (converted by FromStorage and
	// ToStorage); nil when this is the stored one.
	Storage *Resource
	// FromStorage and ToStorage convert objects between Storage's form and
	// this resource's, when they differ beyond apiVersion; each returns a new
	// top-level object and may share the values below it; a CRD version's
	// FromStorage instead sets apiVersion and applies its schema's defaults
	// in place, on objects just decoded. Nil for the rest. They fail only
	// when a CRD's conversion webhook does (a 500 for the request), whose
	// call ctx ends.
	FromStorage, ToStorage func(context.Context, api.Object) (api.Object, error)
	// PrintStored says the Columns print the Storage form of the objects
	// when the server can read it (StoredForm), as kube prints the object
	// it read from storage whatever the version asked: a v1 HPA's metrics
	// in v2's order, which v1 does not keep. The Columns take both forms.
	PrintStored bool
	// StoredForm, set by the server when PrintStored, returns the object
	// in Storage's form at the revision of the one given, or that one.
	StoredForm func(api.Object) api.Object
}

// Subresource is a subresource whose requests and responses are objects of
// another kind, as discovery describes it.
type Subresource struct {
	Name                 string
	Group, Version, Kind string
	Verbs                []string
}

// Part is a subresource writing part of an object.
type Part struct {
	// Write makes the object to store from the stored one and the one
	// written.
	Write func(cur, next api.Object) api.Object
	// ValidateUpdate replaces the resource's validation for writes
	// through the part, as a kube subresource strategy's ValidateUpdate.
	ValidateUpdate func(ctx context.Context, obj, old api.Object) []api.StatusCause
	// Generation makes the part's writes bump the generation of a
	// resource that has one when the spec changes, as a pod's resize does;
	// a status write never does.
	Generation bool
	// Prepare replaces the resource's Prepare for writes through the part.
	Prepare func(obj, old api.Object)
	// Verbs are those the part serves when not get, update and patch.
	Verbs []string
	// Reset are the paths of the fields the part's writes never own in
	// managedFields (ResetFields); nil means status.
	Reset [][]string
	// Only are the patterns of the only fields the part's writes may own
	// (patch.Manager.Only); nil for no such limit.
	Only [][]string
}

// partVerbs are what a part serves unless it says otherwise, as kube's
// discovery lists them.
var partVerbs = []string{"get", "patch", "update"}

// PartVerbs are the verbs the status subresource or part sub serves.
func (r *Resource) PartVerbs(sub string) []string {
	if v := r.Parts[sub].Verbs; v != nil {
		return v
	}
	return partVerbs
}

// WritesPart says whether sub is the status subresource or one of Parts.
func (r *Resource) WritesPart(sub string) bool {
	_, ok := r.Parts[sub]
	return sub == "status" && r.StatusSubresource || ok
}

// Subresource returns the subresource name, if res has it.
func (r *Resource) Subresource(name string) (Subresource, bool) {
	for _, s := range r.Subresources {
		if s.Name == name {
			return s, true
		}
	}
	return Subresource{}, false
}

// Column is one Table column and how to compute its cell.
type Column struct {
	api.TableColumnDefinition
	Cell func(api.Object) any
}

// APIVersion is the apiVersion of the resource's objects: "v1" or "group/version".
func (r *Resource) APIVersion() string {
	if r.Group == "" {
		return r.Version
	}
	return r.Group + "/" + r.Version
}

// GroupResource is "plural" for the core group, else "plural.group", as
// kube-apiserver names resources in messages.
func (r *Resource) GroupResource() string {
	if r.Group == "" {
		return r.Plural
	}
	return r.Plural + "." + r.Group
}

// storageGroup names the group in storage keys.
func (r *Resource) storageGroup() string {
	if r.Group == "" {
		return "core"
	}
	return r.Group
}

// KeyPrefix is the storage prefix of the resource's objects in namespace
// (all namespaces when ns is "", and always for cluster-scoped resources).
// Keys do not depend on the version: every version of a resource shares them,
// and a resource stored as another (Storage) has that one's keys.
func (r *Resource) KeyPrefix(ns string) string {
	k := r.keyed()
	if k.Namespaced && ns != "" {
		return "/registry/" + k.storageGroup() + "/" + k.Plural + "/" + ns + "/"
	}
	return "/registry/" + k.storageGroup() + "/" + k.Plural + "/"
}

// Key is the storage key of one object, made in one concatenation (a
// request's hot path).
func (r *Resource) Key(ns, name string) string {
	k := r.keyed()
	if k.Namespaced && ns != "" {
		return "/registry/" + k.storageGroup() + "/" + k.Plural + "/" + ns + "/" + name
	}
	return "/registry/" + k.storageGroup() + "/" + k.Plural + "/" + name
}

// keyed is the resource whose keys r's objects have.
func (r *Resource) keyed() *Resource {
	if r.Storage != nil {
		return r.Storage
	}
	return r
}

// NamespaceOfKey returns the namespace part of a key made by Key.
func (r *Resource) NamespaceOfKey(key string) string {
	if !r.Namespaced {
		return ""
	}
	rest := strings.TrimPrefix(key, r.KeyPrefix(""))
	ns, _, _ := strings.Cut(rest, "/")
	return ns
}

// StorageVersionHash is kube's discovery hash of the group/version/kind
// objects are stored as: the first 8 bytes of its SHA-256, in base64.
func StorageVersionHash(group, version, kind string) string {
	sum := sha256.Sum256([]byte(group + "/" + version + "/" + kind))
	return base64.StdEncoding.EncodeToString(sum[:8])
}
