// Package crd makes CustomResourceDefinitions (apiextensions.k8s.io/v1)
// define resources, as kube-apiserver's apiextensions server does.
//
// A definition is validated and given its status (NamesAccepted,
// Established, KubernetesAPIApprovalPolicyConformant in the k8s.io and
// kubernetes.io groups, acceptedNames, storedVersions) by the hooks
// Install puts on the built-in customresourcedefinitions resource. Resources turns a
// definition into one resource.Resource per served version: objects are
// stored once, in the storage version, and served in every version by
// rewriting apiVersion (conversion strategy None), or through the
// definition's conversion webhook (strategy Webhook, conversion.go): a
// ConversionReview (v1 or v1beta1, the first of conversionReviewVersions)
// per object that is not in the version wanted, its answer checked as kube
// checks it (uid, result, count, apiVersion and kind, metadata but for
// labels and annotations kept), within ConversionTimeout and the caller's
// context (a client that leaves cancels the call); a failure is the
// request's 500 with kube's message. Each served version's watch cache
// converts each event once, for all its watchers; a conversion that fails
// there ends that version's watchers with the 500 as an ERROR event, and
// the cache serves nothing (lists go to the store, watches are 429) until
// the webhook converts the object (watchcache.Unconvertible). A write
// calls the webhook as often as kube's does: to the stored version, back
// for the answer, and, for an update, for the current object. Each version's
// openAPIV3Schema prunes unknown fields, applies defaults and validates
// objects (Schema); its additionalPrinterColumns (or kube's default Age)
// become Table columns read with kube's JSONPath (ParsePath) and printed
// as kube's table convertor prints them (dates as ages); its selectableFields become field
// selector keys (resource.FieldPaths) for list and watch; its scale
// subresource gives the resource ScalePaths, which the server serves as an
// autoscaling/v1 Scale, and checks on every write that the replicas are
// integers in [0, MaxInt32].
//
// A definition's schemas must be structural as kube requires (structural.go:
// kube's ValidateStructural, what allOf/anyOf/oneOf/not may hold, list and
// map types, unsupported keywords, items given as arrays, the root of a
// schema served with status), with kube's causes; and, as kube's
// ValidateDefaults (defaults.go), every default must survive pruning,
// hold valid embedded resources, meet its schema and pass its rules (of
// kube's ObjectMeta validation of the metadata a default makes, owner
// references, finalizers and managed fields are not checked).
//
// CEL validation rules (x-kubernetes-validations, cel.go) run on cel-go
// with kube's environment as far as cel-go provides it; each schema object
// is a declared CEL object type, so rules type-check and are costed field
// by field as kube's. They are compiled once per definition version, when
// the definition is validated (kube's compile and cost-limit causes) and
// again when it is served; requests only evaluate them, each rule once,
// within kube's per-call cost limit and per-request budget and kube's
// default request timeout. On update, oldSelf and kube's ratcheting pair
// values with the stored object's as kube's CorrelatedObject does
// (correlate.go): a failed rule that does not read oldSelf on an unchanged
// value does not block the update and is sent as a warning, as kube's.
//
// Sync keeps a Catalog in step with the definitions in a store: it loads them
// on start, applies every write made through this server at once (Refresh),
// and follows a storage watch for writes made by other servers on the same
// store.
//
// # Concurrency
//
// Schemas (their rules compiled) and Paths are immutable once built and
// safe for concurrent use.
// Sync's follow.Follower serialises catalogue changes and owns one
// goroutine, stopped by Close.
//
// # Caveats
//
// Conversion webhooks: a list read from the store (pages, exact reads;
// not the watch cache) sends one review per object, as each object is
// decoded (kube's storage decoder converts object by object too); objects stored in an older
// storage version are served in the current storage version by rewriting
// apiVersion, not converted (the other versions convert them); services
// are resolved by DNS.
//
// Not implemented: the Terminating phase of a definition being deleted (its objects are deleted
// right after it; the DELETE answers it as kube marks it).
package crd
