package resource

import "strings"

// The OpenAPI v3 schemas of the built-in kinds and of the meta/v1 types they
// reference, with kube's field names, types, formats and patch extensions
// (k8s.io/api and k8s.io/apiextensions-apiserver v0.37). References use the
// v3 form "#/components/schemas/<name>"; the definitions are named as kube
// names them, so kubectl finds what it knows.

// Definition names of the shared meta/v1 types.
const (
	metaPrefix     = "io.k8s.apimachinery.pkg.apis.meta.v1."
	ObjectMetaName = metaPrefix + "ObjectMeta"
	ListMetaName   = metaPrefix + "ListMeta"
	StatusName     = metaPrefix + "Status"
	PatchName      = metaPrefix + "Patch"
	DeleteOptsName = metaPrefix + "DeleteOptions"
	corePrefix     = "io.k8s.api.core.v1."
	apiextPrefix   = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1."
	coordPrefix    = "io.k8s.api.coordination.v1."
	eventsPrefix   = "io.k8s.api.events.v1."
)

// definitionPrefixes names the Go packages of the built-in groups, as kube's
// definition names do.
var definitionPrefixes = map[string]string{
	"":                             "io.k8s.api.core",
	"admissionregistration.k8s.io": "io.k8s.api.admissionregistration",
	"apiextensions.k8s.io":         "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
	"authentication.k8s.io":        "io.k8s.api.authentication",
	"authorization.k8s.io":         "io.k8s.api.authorization",
	"coordination.k8s.io":          "io.k8s.api.coordination",
	"events.k8s.io":                "io.k8s.api.events",
	"rbac.authorization.k8s.io":    "io.k8s.api.rbac",
}

// DefinitionName is the name kube gives the definition of a kind:
// "io.k8s.api.core.v1.ConfigMap" for built-ins and the reversed group for
// others ("com.example.stable.v1.CronTab" for stable.example.com).
func DefinitionName(group, version, kind string) string {
	prefix, ok := definitionPrefixes[group]
	if !ok {
		parts := strings.Split(group, ".")
		for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
			parts[i], parts[j] = parts[j], parts[i]
		}
		prefix = strings.Join(parts, ".")
	}
	return prefix + "." + version + "." + kind
}

// Definitions returns the schemas that the built-in kinds' schemas reference,
// by definition name. Each call returns new maps.
func Definitions() map[string]map[string]any {
	defs := map[string]map[string]any{}
	for _, set := range []map[string]map[string]any{metaDefinitions(), coreDefinitions(), serviceAccountDefinitions(), coordinationDefinitions(), eventsDefinitions(), rbacDefinitions(), reviewDefinitions(), apiextensionsDefinitions(), scaleDefinitions(), admissionregistrationDefinitions(), admissionPolicyDefinitions()} {
		for k, v := range set {
			defs[k] = v
		}
	}
	return defs
}

// builtinSchema returns the schema of a built-in kind, or nil.
func builtinSchema(group, version, kind string) map[string]any {
	return Definitions()[DefinitionName(group, version, kind)]
}

// Schema constructors: each returns a new map.

func object(desc string, props map[string]any, required ...string) map[string]any {
	s := map[string]any{"type": "object", "properties": props}
	if desc != "" {
		s["description"] = desc
	}
	if len(required) > 0 {
		req := make([]any, len(required))
		for i, r := range required {
			req[i] = r
		}
		s["required"] = req
	}
	return s
}

func typed(typ, format, desc string) map[string]any {
	s := map[string]any{"type": typ}
	if format != "" {
		s["format"] = format
	}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func str(desc string) map[string]any     { return typed("string", "", desc) }
func boolean(desc string) map[string]any { return typed("boolean", "", desc) }
func int32f(desc string) map[string]any  { return typed("integer", "int32", desc) }
func int64f(desc string) map[string]any  { return typed("integer", "int64", desc) }

// ref is a property holding the named definition, in kube's v3 form.
func ref(name, desc string) map[string]any {
	s := map[string]any{"allOf": []any{map[string]any{"$ref": "#/components/schemas/" + name}}}
	if desc != "" {
		s["description"] = desc
	}
	return s
}

func arrayOf(items map[string]any, desc string) map[string]any {
	s := typed("array", "", desc)
	s["items"] = items
	return s
}

func mapOf(values map[string]any, desc string) map[string]any {
	s := typed("object", "", desc)
	s["additionalProperties"] = values
	return s
}

func refItem(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

// with adds extensions (or other keys) to s.
func with(s map[string]any, kv ...any) map[string]any {
	for i := 0; i+1 < len(kv); i += 2 {
		s[kv[i].(string)] = kv[i+1]
	}
	return s
}

// typeMeta returns the apiVersion and kind properties every kind has.
func typeMeta(props map[string]any) map[string]any {
	props["apiVersion"] = str("APIVersion defines the versioned schema of this representation of an object.")
	props["kind"] = str("Kind is a string value representing the REST resource this object represents.")
	return props
}

func objectMeta() map[string]any {
	return ref(ObjectMetaName, "Standard object's metadata.")
}

// gvk is the x-kubernetes-group-version-kind extension of a kind's schema.
func gvk(group, version, kind string) []any {
	return []any{map[string]any{"group": group, "version": version, "kind": kind}}
}

// kind is a top-level kind's schema.
func kind(group, version, name, desc string, props map[string]any, required ...string) map[string]any {
	props["metadata"] = objectMeta()
	s := object(desc, typeMeta(props), required...)
	s["x-kubernetes-group-version-kind"] = gvk(group, version, name)
	return s
}

func metaDefinitions() map[string]map[string]any {
	stringMap := func(desc string) map[string]any { return mapOf(str(""), desc) }
	timeRef := func(desc string) map[string]any { return ref(metaPrefix+"Time", desc) }
	return map[string]map[string]any{
		ObjectMetaName: object("ObjectMeta is metadata that all persisted resources must have, which includes all objects users must create.", map[string]any{
			"annotations":                stringMap("Annotations is an unstructured key value map stored with a resource that may be set by external tools to store and retrieve arbitrary metadata."),
			"creationTimestamp":          timeRef("CreationTimestamp is a timestamp representing the server time when this object was created."),
			"deletionGracePeriodSeconds": int64f("Number of seconds allowed for this object to gracefully terminate before it will be removed from the system."),
			"deletionTimestamp":          timeRef("DeletionTimestamp is RFC 3339 date and time at which this resource will be deleted."),
			"finalizers":                 with(arrayOf(str(""), "Must be empty before the object is deleted from the registry."), "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "set"),
			"generateName":               str("GenerateName is an optional prefix, used by the server, to generate a unique name ONLY IF the Name field has not been provided."),
			"generation":                 int64f("A sequence number representing a specific generation of the desired state."),
			"labels":                     stringMap("Map of string keys and values that can be used to organize and categorize (scope and select) objects."),
			"managedFields":              with(arrayOf(refItem(metaPrefix+"ManagedFieldsEntry"), "ManagedFields maps workflow-id and version to the set of fields that are managed by that workflow."), "x-kubernetes-list-type", "atomic"),
			"name":                       str("Name must be unique within a namespace."),
			"namespace":                  str("Namespace defines the space within which each name must be unique."),
			"ownerReferences": with(arrayOf(refItem(metaPrefix+"OwnerReference"), "List of objects depended by this object."),
				"x-kubernetes-patch-merge-key", "uid", "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"uid"}),
			"resourceVersion": str("An opaque value that represents the internal version of this object that can be used by clients to determine when objects have changed."),
			"selfLink":        str("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
			"uid":             str("UID is the unique in time and space value for this object."),
		}),
		metaPrefix + "OwnerReference": with(object("OwnerReference contains enough information to let you identify an owning object.", map[string]any{
			"apiVersion":         str("API version of the referent."),
			"blockOwnerDeletion": boolean("If true, AND if the owner has the \"foregroundDeletion\" finalizer, then the owner cannot be deleted from the key-value store until this reference is removed."),
			"controller":         boolean("If true, this reference points to the managing controller."),
			"kind":               str("Kind of the referent."),
			"name":               str("Name of the referent."),
			"uid":                str("UID of the referent."),
		}, "apiVersion", "kind", "name", "uid"), "x-kubernetes-map-type", "atomic"),
		metaPrefix + "ManagedFieldsEntry": object("ManagedFieldsEntry is a workflow-id, a FieldSet and the group version of the resource that the fieldset applies to.", map[string]any{
			"apiVersion":  str("APIVersion defines the version of this resource that this field set applies to."),
			"fieldsType":  str("FieldsType is the discriminator for the different fields format and version."),
			"fieldsV1":    ref(metaPrefix+"FieldsV1", "FieldsV1 holds the first JSON version format as described in the \"FieldsV1\" type."),
			"manager":     str("Manager is an identifier of the workflow managing these fields."),
			"operation":   str("Operation is the type of operation which lead to this ManagedFieldsEntry being created."),
			"subresource": str("Subresource is the name of the subresource used to update that object, or empty string if the object was updated through the main resource."),
			"time":        timeRef("Time is the timestamp of when the ManagedFields entry was added."),
		}),
		metaPrefix + "FieldsV1":  typed("object", "", "FieldsV1 stores a set of fields in a data structure like a Trie, in JSON format."),
		metaPrefix + "Time":      typed("string", "date-time", "Time is a wrapper around time.Time which supports correct marshaling to YAML and JSON."),
		metaPrefix + "MicroTime": typed("string", "date-time", "MicroTime is version of Time with microsecond level precision."),
		ListMetaName: object("ListMeta describes metadata that synthetic resources must have, including lists and various status objects.", map[string]any{
			"continue":           str("continue may be set if the user set a limit on the number of items returned."),
			"remainingItemCount": int64f("remainingItemCount is the number of subsequent items in the list which are not included in this list response."),
			"resourceVersion":    str("String that identifies the server's internal version of this object."),
			"selfLink":           str("Deprecated: selfLink is a legacy read-only field that is no longer populated by the system."),
		}),
		StatusName: with(object("Status is a return value for calls that don't return other objects.", typeMeta(map[string]any{
			"code":     int32f("Suggested HTTP return code for this status, 0 if not set."),
			"details":  ref(metaPrefix+"StatusDetails", "Extended data associated with the reason."),
			"message":  str("A human-readable description of the status of this operation."),
			"metadata": ref(ListMetaName, "Standard list metadata."),
			"reason":   str("A machine-readable description of why this operation is in the \"Failure\" status."),
			"status":   str("Status of the operation. One of: \"Success\" or \"Failure\"."),
		})), "x-kubernetes-group-version-kind", gvk("", "v1", "Status")),
		metaPrefix + "StatusDetails": object("StatusDetails is a set of additional properties that MAY be set by the server to provide additional information about a response.", map[string]any{
			"causes":            with(arrayOf(refItem(metaPrefix+"StatusCause"), "The Causes array includes more details associated with the StatusReason failure."), "x-kubernetes-list-type", "atomic"),
			"group":             str("The group attribute of the resource associated with the status StatusReason."),
			"kind":              str("The kind attribute of the resource associated with the status StatusReason."),
			"name":              str("The name attribute of the resource associated with the status StatusReason (when there is a single name which can be described)."),
			"retryAfterSeconds": int32f("If specified, the time in seconds before the operation should be retried."),
			"uid":               str("UID of the resource."),
		}),
		metaPrefix + "StatusCause": object("StatusCause provides more information about an api.Status failure, including cases when multiple errors are encountered.", map[string]any{
			"field":   str("The field of the resource that has caused this error, as named by its JSON serialization."),
			"message": str("A human-readable description of the cause of the error."),
			"reason":  str("A machine-readable description of the cause of the error."),
		}),
		DeleteOptsName: with(object("DeleteOptions may be provided when deleting an API object.", typeMeta(map[string]any{
			"dryRun":             with(arrayOf(str(""), "When present, indicates that modifications should not be persisted."), "x-kubernetes-list-type", "atomic"),
			"gracePeriodSeconds": int64f("The duration in seconds before the object should be deleted."),
			"orphanDependents":   boolean("Deprecated: please use the PropagationPolicy."),
			"preconditions":      ref(metaPrefix+"Preconditions", "Must be fulfilled before a deletion is carried out."),
			"propagationPolicy":  str("Whether and how garbage collection will be performed."),
		})), "x-kubernetes-group-version-kind", gvk("", "v1", "DeleteOptions")),
		metaPrefix + "Preconditions": object("Preconditions must be fulfilled before an operation (update, delete, etc.) is carried out.", map[string]any{
			"resourceVersion": str("Specifies the target ResourceVersion"),
			"uid":             str("Specifies the target UID."),
		}),
		PatchName: typed("object", "", "Patch is provided to give a concrete name and type to the Kubernetes PATCH request body."),
	}
}

func coreDefinitions() map[string]map[string]any {
	return map[string]map[string]any{
		corePrefix + "Namespace": kind("", "v1", "Namespace", "Namespace provides a scope for Names. Use of multiple namespaces is optional.", map[string]any{
			"spec":   ref(corePrefix+"NamespaceSpec", "Spec defines the behavior of the Namespace."),
			"status": ref(corePrefix+"NamespaceStatus", "Status describes the current status of a Namespace."),
		}),
		corePrefix + "NamespaceSpec": object("NamespaceSpec describes the attributes on a Namespace.", map[string]any{
			"finalizers": with(arrayOf(str(""), "Finalizers is an opaque list of values that must be empty to permanently remove object from storage."), "x-kubernetes-list-type", "atomic"),
		}),
		corePrefix + "NamespaceStatus": object("NamespaceStatus is information about the current status of a Namespace.", map[string]any{
			"conditions": with(arrayOf(refItem(corePrefix+"NamespaceCondition"), "Represents the latest available observations of a namespace's current state."),
				"x-kubernetes-patch-merge-key", "type", "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"type"}),
			"phase": with(str("Phase is the current lifecycle phase of the namespace."), "enum", []any{"Active", "Terminating"}),
		}),
		corePrefix + "NamespaceCondition": object("NamespaceCondition contains details about state of namespace.", map[string]any{
			"lastTransitionTime": ref(metaPrefix+"Time", "Last time the condition transitioned from one status to another."),
			"message":            str("Human-readable message indicating details about last transition."),
			"reason":             str("Unique, one-word, CamelCase reason for the condition's last transition."),
			"status":             str("Status of the condition, one of True, False, Unknown."),
			"type":               str("Type of namespace controller condition."),
		}, "type", "status"),
		corePrefix + "ConfigMap": kind("", "v1", "ConfigMap", "ConfigMap holds configuration data for pods to consume.", map[string]any{
			"binaryData": mapOf(typed("string", "byte", ""), "BinaryData contains the binary data."),
			"data":       mapOf(str(""), "Data contains the configuration data."),
			"immutable":  boolean("Immutable, if set to true, ensures that data stored in the ConfigMap cannot be updated (only object metadata can be modified)."),
		}),
		corePrefix + "Secret": kind("", "v1", "Secret", "Secret holds secret data of a certain type. The total bytes of the values in the Data field must be less than MaxSecretSize bytes.", map[string]any{
			"data":       mapOf(typed("string", "byte", ""), "Data contains the secret data."),
			"immutable":  boolean("Immutable, if set to true, ensures that data stored in the Secret cannot be updated (only object metadata can be modified)."),
			"stringData": mapOf(str(""), "stringData allows specifying non-binary secret data in string form. It is never output when reading from the API."),
			"type":       str("Used to facilitate programmatic handling of secret data."),
		}),
		corePrefix + "Event": kind("", "v1", "Event", "Event is a report of an event somewhere in the cluster.", eventProperties(), "metadata", "involvedObject"),
		corePrefix + "EventSource": object("EventSource contains information for an event.", map[string]any{
			"component": str("Component from which the event is generated."),
			"host":      str("Node name on which the event is generated."),
		}),
		corePrefix + "EventSeries": object("EventSeries contain information on series of events, i.e. thing that was/is happening continuously for some time.", map[string]any{
			"count":            int32f("Number of occurrences in this series up to the last heartbeat time"),
			"lastObservedTime": ref(metaPrefix+"MicroTime", "Time of the last occurrence observed"),
		}),
		corePrefix + "ObjectReference": with(object("ObjectReference contains enough information to let you inspect or modify the referred object.", map[string]any{
			"apiVersion":      str("API version of the referent."),
			"fieldPath":       str("If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement."),
			"kind":            str("Kind of the referent."),
			"name":            str("Name of the referent."),
			"namespace":       str("Namespace of the referent."),
			"resourceVersion": str("Specific resourceVersion to which this reference is made, if any."),
			"uid":             str("UID of the referent."),
		}), "x-kubernetes-map-type", "atomic"),
	}
}

func eventProperties() map[string]any {
	return map[string]any{
		"action":             str("What action was taken/failed regarding to the Regarding object."),
		"count":              int32f("The number of times this event has occurred."),
		"eventTime":          ref(metaPrefix+"MicroTime", "Time when this Event was first observed."),
		"firstTimestamp":     ref(metaPrefix+"Time", "The time at which the event was first recorded."),
		"involvedObject":     ref(corePrefix+"ObjectReference", "The object that this event is about."),
		"lastTimestamp":      ref(metaPrefix+"Time", "The time at which the most recent occurrence of this event was recorded."),
		"message":            str("A human-readable description of the status of this operation."),
		"reason":             str("This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
		"related":            ref(corePrefix+"ObjectReference", "Optional secondary object for more complex actions."),
		"reportingComponent": str("Name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`."),
		"reportingInstance":  str("ID of the controller instance, e.g. `kubelet-xyzf`."),
		"series":             ref(corePrefix+"EventSeries", "Data about the Event series this event represents or nil if it's a singleton Event."),
		"source":             ref(corePrefix+"EventSource", "The component reporting this event."),
		"type":               str("Type of this event (Normal, Warning), new types could be added in the future"),
	}
}

// eventsDefinitions are events.k8s.io/v1's Event (metadata is optional
// there, eventTime required).
func eventsDefinitions() map[string]map[string]any {
	deprecated := "is the deprecated field assuring backward compatibility with core.v1 Event type."
	return map[string]map[string]any{
		eventsPrefix + "Event": kind("events.k8s.io", "v1", "Event", "Event is a report of an event somewhere in the cluster. It generally denotes some state change in the system. Events have a limited retention time and triggers and messages may evolve with time.", map[string]any{
			"action":                   str("action is what action was taken/failed regarding to the regarding object. It is machine-readable. This field cannot be empty for new Events and it can have at most 128 characters."),
			"deprecatedCount":          int32f("deprecatedCount " + deprecated),
			"deprecatedFirstTimestamp": ref(metaPrefix+"Time", "deprecatedFirstTimestamp "+deprecated),
			"deprecatedLastTimestamp":  ref(metaPrefix+"Time", "deprecatedLastTimestamp "+deprecated),
			"deprecatedSource":         ref(corePrefix+"EventSource", "deprecatedSource "+deprecated),
			"eventTime":                ref(metaPrefix+"MicroTime", "eventTime is the time when this Event was first observed. It is required."),
			"note":                     str("note is a human-readable description of the status of this operation. Maximal length of the note is 1kB, but libraries should be prepared to handle values up to 64kB."),
			"reason":                   str("reason is why the action was taken. It is human-readable. This field cannot be empty for new Events and it can have at most 128 characters."),
			"regarding":                ref(corePrefix+"ObjectReference", "regarding contains the object this Event is about."),
			"related":                  ref(corePrefix+"ObjectReference", "related is the optional secondary object for more complex actions."),
			"reportingController":      str("reportingController is the name of the controller that emitted this Event, e.g. `kubernetes.io/kubelet`. This field cannot be empty for new Events."),
			"reportingInstance":        str("reportingInstance is the ID of the controller instance, e.g. `kubelet-xyzf`. This field cannot be empty for new Events and it can have at most 128 characters."),
			"series":                   ref(eventsPrefix+"EventSeries", "series is data about the Event series this event represents or nil if it's a singleton Event."),
			"type":                     str("type is the type of this event (Normal, Warning), new types could be added in the future. It is machine-readable. This field cannot be empty for new Events."),
		}, "eventTime"),
		eventsPrefix + "EventSeries": object("EventSeries contain information on series of events, i.e. thing that was/is happening continuously for some time.", map[string]any{
			"count":            int32f("count is the number of occurrences in this series up to the last heartbeat time."),
			"lastObservedTime": ref(metaPrefix+"MicroTime", "lastObservedTime is the time when last Event from the series was seen before last heartbeat."),
		}, "count", "lastObservedTime"),
	}
}

func coordinationDefinitions() map[string]map[string]any {
	micro := func(desc string) map[string]any { return ref(metaPrefix+"MicroTime", desc) }
	return map[string]map[string]any{
		coordPrefix + "Lease": kind("coordination.k8s.io", "v1", "Lease", "Lease defines a lease concept.", map[string]any{
			"spec": ref(coordPrefix+"LeaseSpec", "spec contains the specification of the Lease."),
		}),
		coordPrefix + "LeaseSpec": object("LeaseSpec is a specification of a Lease.", map[string]any{
			"acquireTime":          micro("acquireTime is a time when the current lease was acquired."),
			"holderIdentity":       str("holderIdentity contains the identity of the holder of a current lease."),
			"leaseDurationSeconds": int32f("leaseDurationSeconds is a duration that candidates for a lease need to wait to force acquire it. This is measured against the time of last observed renewTime."),
			"leaseTransitions":     int32f("leaseTransitions is the number of transitions of a lease between holders."),
			"preferredHolder":      str("preferredHolder signals to a lease holder that the lease has a more optimal holder and should be given up. This field can only be set if Strategy is also set."),
			"renewTime":            micro("renewTime is a time when the current holder of a lease has last updated the lease."),
			"strategy":             str("strategy indicates the strategy for picking the leader for coordinated leader election. If the field is not specified, there is no active coordination for this lease."),
		}),
	}
}

func apiextensionsDefinitions() map[string]map[string]any {
	p := apiextPrefix
	return map[string]map[string]any{
		p + "CustomResourceDefinition": kind("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "CustomResourceDefinition represents a resource that should be exposed on the API server. Its name MUST be in the format <.spec.name>.<.spec.group>.", map[string]any{
			"spec":   ref(p+"CustomResourceDefinitionSpec", "spec describes how the user wants the resources to appear"),
			"status": ref(p+"CustomResourceDefinitionStatus", "status indicates the actual state of the CustomResourceDefinition"),
		}, "spec"),
		p + "CustomResourceDefinitionSpec": object("CustomResourceDefinitionSpec describes how a user wants their resource to appear", map[string]any{
			"conversion":            ref(p+"CustomResourceConversion", "conversion defines conversion settings for the CRD."),
			"group":                 str("group is the API group of the defined custom resource."),
			"names":                 ref(p+"CustomResourceDefinitionNames", "names specify the resource and kind names for the custom resource."),
			"preserveUnknownFields": boolean("preserveUnknownFields indicates that object fields which are not specified in the OpenAPI schema should be preserved when persisting to storage."),
			"scope":                 str("scope indicates whether the defined custom resource is cluster- or namespace-scoped. Allowed values are `Cluster` and `Namespaced`."),
			"versions":              with(arrayOf(refItem(p+"CustomResourceDefinitionVersion"), "versions is the list of all API versions of the defined custom resource."), "x-kubernetes-list-type", "atomic"),
		}, "group", "names", "scope", "versions"),
		p + "CustomResourceDefinitionNames": object("CustomResourceDefinitionNames indicates the names to serve this CustomResourceDefinition", map[string]any{
			"categories": with(arrayOf(str(""), "categories is a list of grouped resources this custom resource belongs to (e.g. 'all')."), "x-kubernetes-list-type", "atomic"),
			"kind":       str("kind is the serialized kind of the resource. It is normally CamelCase and singular."),
			"listKind":   str("listKind is the serialized kind of the list for this resource. Defaults to \"`kind`List\"."),
			"plural":     str("plural is the plural name of the resource to serve."),
			"shortNames": with(arrayOf(str(""), "shortNames are short names for the resource, exposed in API discovery documents."), "x-kubernetes-list-type", "atomic"),
			"singular":   str("singular is the singular name of the resource. It must be all lowercase. Defaults to lowercased `kind`."),
		}, "plural", "kind"),
		p + "CustomResourceDefinitionVersion": object("CustomResourceDefinitionVersion describes a version for CRD.", map[string]any{
			"additionalPrinterColumns": with(arrayOf(refItem(p+"CustomResourceColumnDefinition"), "additionalPrinterColumns specifies additional columns returned in Table output."), "x-kubernetes-list-type", "atomic"),
			"deprecated":               boolean("deprecated indicates this version of the custom resource API is deprecated."),
			"deprecationWarning":       str("deprecationWarning overrides the default warning returned to API clients."),
			"name":                     str("name is the version name, e.g. “v1”, “v2beta1”, etc."),
			"schema":                   ref(p+"CustomResourceValidation", "schema describes the schema used for validation, pruning, and defaulting of this version of the custom resource."),
			"selectableFields":         with(arrayOf(refItem(p+"SelectableField"), "selectableFields specifies paths to fields that may be used as field selectors."), "x-kubernetes-list-type", "atomic"),
			"served":                   boolean("served is a flag enabling/disabling this version from being served via REST APIs"),
			"storage":                  boolean("storage indicates this version should be used when persisting custom resources to storage."),
			"subresources":             ref(p+"CustomResourceSubresources", "subresources specify what subresources this version of the defined custom resource have."),
		}, "name", "served", "storage"),
		p + "CustomResourceColumnDefinition": object("CustomResourceColumnDefinition specifies a column for server side printing.", map[string]any{
			"description": str("description is a human readable description of this column."),
			"format":      str("format is an optional OpenAPI type definition for this column."),
			"jsonPath":    str("jsonPath is a simple JSON path (i.e. with array notation) which is evaluated against each custom resource to produce the value for this column."),
			"name":        str("name is a human readable name for the column."),
			"priority":    int32f("priority is an integer defining the relative importance of this column compared to others."),
			"type":        str("type is an OpenAPI type definition for this column."),
		}, "name", "type", "jsonPath"),
		p + "SelectableField": object("SelectableField specifies the JSON path of a field that may be used with field selectors.", map[string]any{
			"jsonPath": str("jsonPath is a simple JSON path which is evaluated against each custom resource to produce a field selector value."),
		}, "jsonPath"),
		p + "CustomResourceValidation": object("CustomResourceValidation is a list of validation methods for CustomResources.", map[string]any{
			"openAPIV3Schema": ref(p+"JSONSchemaProps", "openAPIV3Schema is the OpenAPI v3 schema to use for validation and pruning."),
		}),
		p + "CustomResourceSubresources": object("CustomResourceSubresources defines the status and scale subresources for CustomResources.", map[string]any{
			"scale":  ref(p+"CustomResourceSubresourceScale", "scale indicates the custom resource should serve a `/scale` subresource."),
			"status": ref(p+"CustomResourceSubresourceStatus", "status indicates the custom resource should serve a `/status` subresource."),
		}),
		p + "CustomResourceSubresourceStatus": typed("object", "", "CustomResourceSubresourceStatus defines how to serve the status subresource for CustomResources."),
		p + "CustomResourceSubresourceScale": object("CustomResourceSubresourceScale defines how to serve the scale subresource for CustomResources.", map[string]any{
			"labelSelectorPath":  str("labelSelectorPath defines the JSON path inside of a custom resource that corresponds to Scale `status.selector`."),
			"specReplicasPath":   str("specReplicasPath defines the JSON path inside of a custom resource that corresponds to Scale `spec.replicas`."),
			"statusReplicasPath": str("statusReplicasPath defines the JSON path inside of a custom resource that corresponds to Scale `status.replicas`."),
		}, "specReplicasPath", "statusReplicasPath"),
		p + "CustomResourceConversion": object("CustomResourceConversion describes how to convert different versions of a CR.", map[string]any{
			"strategy": str("strategy specifies how custom resources are converted between versions. Allowed values are: - `\"None\"` - `\"Webhook\"`."),
			"webhook":  ref(p+"WebhookConversion", "webhook describes how to call the conversion webhook. Required when `strategy` is set to `\"Webhook\"`."),
		}, "strategy"),
		p + "WebhookConversion": object("WebhookConversion describes how to call a conversion webhook", map[string]any{
			"clientConfig":             ref(p+"WebhookClientConfig", "clientConfig is the instructions for how to call the webhook if strategy is `Webhook`."),
			"conversionReviewVersions": with(arrayOf(str(""), "conversionReviewVersions is an ordered list of preferred `ConversionReview` versions the Webhook expects."), "x-kubernetes-list-type", "atomic"),
		}, "conversionReviewVersions"),
		p + "WebhookClientConfig": object("WebhookClientConfig contains the information to make a TLS connection with the webhook.", map[string]any{
			"caBundle": typed("string", "byte", "caBundle is a PEM encoded CA bundle which will be used to validate the webhook's server certificate."),
			"service":  ref(p+"ServiceReference", "service is a reference to the service for this webhook."),
			"url":      str("url gives the location of the webhook, in standard URL form (`scheme://host:port/path`)."),
		}),
		p + "ServiceReference": object("ServiceReference holds a reference to Service.legacy.k8s.io", map[string]any{
			"name":      str("name is the name of the service."),
			"namespace": str("namespace is the namespace of the service."),
			"path":      str("path is an optional URL path at which the webhook will be contacted."),
			"port":      int32f("port is an optional service port at which the webhook will be contacted."),
		}, "namespace", "name"),
		p + "CustomResourceDefinitionStatus": object("CustomResourceDefinitionStatus indicates the state of the CustomResourceDefinition", map[string]any{
			"acceptedNames": ref(p+"CustomResourceDefinitionNames", "acceptedNames are the names that are actually being used to serve discovery."),
			"conditions": with(arrayOf(refItem(p+"CustomResourceDefinitionCondition"), "conditions indicate state for particular aspects of a CustomResourceDefinition"),
				"x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"type"}),
			"storedVersions": with(arrayOf(str(""), "storedVersions lists all versions of CustomResources that were ever persisted."), "x-kubernetes-list-type", "atomic"),
		}),
		p + "CustomResourceDefinitionCondition": object("CustomResourceDefinitionCondition contains details for the current condition of this pod.", map[string]any{
			"lastTransitionTime": ref(metaPrefix+"Time", "lastTransitionTime last time the condition transitioned from one status to another."),
			"message":            str("message is a human-readable message indicating details about last transition."),
			"reason":             str("reason is a unique, one-word, CamelCase reason for the condition's last transition."),
			"status":             str("status is the status of the condition. Can be True, False, Unknown."),
			"type":               str("type is the type of the condition. Types include Established, NamesAccepted and Terminating."),
		}, "type", "status"),
		p + "JSONSchemaProps": jsonSchemaProps(),
		p + "ValidationRule":  validationRule(),
		p + "ExternalDocumentation": object("ExternalDocumentation allows referencing an external resource for extended documentation.", map[string]any{
			"description": str(""),
			"url":         str(""),
		}),
		// JSON, JSONSchemaPropsOrArray, JSONSchemaPropsOrBool and
		// JSONSchemaPropsOrStringArray hold any JSON value.
		p + "JSON":                         {"description": "JSON represents any valid JSON value."},
		p + "JSONSchemaPropsOrArray":       {"description": "JSONSchemaPropsOrArray represents a value that can either be a JSONSchemaProps or an array of JSONSchemaProps."},
		p + "JSONSchemaPropsOrBool":        {"description": "JSONSchemaPropsOrBool represents JSONSchemaProps or a boolean value. Defaults to true for the boolean property."},
		p + "JSONSchemaPropsOrStringArray": {"description": "JSONSchemaPropsOrStringArray represents a JSONSchemaProps or a string array."},
	}
}

// jsonSchemaProps is the schema of a CRD's openAPIV3Schema: JSON Schema
// itself, recursively.
func jsonSchemaProps() map[string]any {
	p := apiextPrefix
	self, json := refItem(p+"JSONSchemaProps"), refItem(p+"JSON")
	props := map[string]any{
		"$ref": str(""), "$schema": str(""), "id": str(""), "title": str(""), "description": str(""),
		"type": str(""), "format": str(""), "pattern": str(""),
		"default": ref(p+"JSON", "default is a default value for undefined object fields."),
		"example": ref(p+"JSON", ""),
		"enum":    with(arrayOf(json, ""), "x-kubernetes-list-type", "atomic"),
		"maximum": typed("number", "double", ""), "minimum": typed("number", "double", ""), "multipleOf": typed("number", "double", ""),
		"exclusiveMaximum": boolean(""), "exclusiveMinimum": boolean(""), "uniqueItems": boolean(""), "nullable": boolean(""),
		"maxItems": int64f(""), "minItems": int64f(""), "maxLength": int64f(""), "minLength": int64f(""),
		"maxProperties": int64f(""), "minProperties": int64f(""),
		"required":                             with(arrayOf(str(""), ""), "x-kubernetes-list-type", "atomic"),
		"items":                                ref(p+"JSONSchemaPropsOrArray", ""),
		"additionalItems":                      ref(p+"JSONSchemaPropsOrBool", ""),
		"additionalProperties":                 ref(p+"JSONSchemaPropsOrBool", ""),
		"allOf":                                with(arrayOf(self, ""), "x-kubernetes-list-type", "atomic"),
		"anyOf":                                with(arrayOf(self, ""), "x-kubernetes-list-type", "atomic"),
		"oneOf":                                with(arrayOf(self, ""), "x-kubernetes-list-type", "atomic"),
		"not":                                  ref(p+"JSONSchemaProps", ""),
		"properties":                           mapOf(self, ""),
		"patternProperties":                    mapOf(self, ""),
		"definitions":                          mapOf(self, ""),
		"dependencies":                         mapOf(refItem(p+"JSONSchemaPropsOrStringArray"), ""),
		"externalDocs":                         ref(p+"ExternalDocumentation", ""),
		"x-kubernetes-preserve-unknown-fields": boolean("x-kubernetes-preserve-unknown-fields stops the API server decoding step from pruning fields which are not specified in the validation schema."),
		"x-kubernetes-embedded-resource":       boolean("x-kubernetes-embedded-resource defines that the value is an embedded Kubernetes runtime.Object, with TypeMeta and ObjectMeta."),
		"x-kubernetes-int-or-string":           boolean("x-kubernetes-int-or-string specifies that this value is either an integer or a string."),
		"x-kubernetes-list-map-keys":           with(arrayOf(str(""), "x-kubernetes-list-map-keys annotates an array with the x-kubernetes-list-type `map` by specifying the keys used as the index of the map."), "x-kubernetes-list-type", "atomic"),
		"x-kubernetes-list-type":               str("x-kubernetes-list-type annotates an array to further describe its topology."),
		"x-kubernetes-map-type":                str("x-kubernetes-map-type annotates an object to further describe its topology."),
		"x-kubernetes-validations": with(arrayOf(refItem(p+"ValidationRule"), "x-kubernetes-validations describes a list of validation rules written in the CEL expression language."),
			"x-kubernetes-patch-merge-key", "rule", "x-kubernetes-patch-strategy", "merge", "x-kubernetes-list-type", "map", "x-kubernetes-list-map-keys", []any{"rule"}),
	}
	return object("JSONSchemaProps is a JSON-Schema following Specification Draft 4 (http://json-schema.org/).", props)
}

func validationRule() map[string]any {
	return object("ValidationRule describes a validation rule written in the CEL expression language.", map[string]any{
		"fieldPath":         str("fieldPath represents the field path returned when the validation fails."),
		"message":           str("Message represents the message displayed when validation fails."),
		"messageExpression": str("MessageExpression declares a CEL expression that evaluates to the validation failure message that is returned when this rule fails."),
		"optionalOldSelf":   boolean("optionalOldSelf is used to opt a transition rule into evaluation even when the object is first created, or if the old object is missing the value."),
		"reason":            str("reason provides a machine-readable validation failure reason that is returned to the caller when a request fails this validation rule."),
		"rule":              str("Rule represents the expression which will be evaluated by CEL."),
	}, "rule")
}
