// Package crd makes CustomResourceDefinitions (apiextensions.k8s.io/v1)
// define resources, as kube-apiserver's apiextensions server does.
//
// A definition is validated and given its status (NamesAccepted,
// Established, acceptedNames, storedVersions) by the hooks Install puts on
// the built-in customresourcedefinitions resource. Resources turns a
// definition into one resource.Resource per served version: objects are
// stored once, in the storage version, and served in every version by
// rewriting apiVersion (conversion strategy None). Each version's
// openAPIV3Schema prunes unknown fields, applies defaults and validates
// objects (Schema); its additionalPrinterColumns become Table columns read
// with a JSONPath subset (ParsePath).
//
// Sync keeps a Catalog in step with the definitions in a store: it loads them
// on start, applies every write made through this server at once (Refresh),
// and follows a storage watch for writes made by other servers on the same
// store.
//
// # Concurrency
//
// Schemas and Paths are immutable once parsed and safe for concurrent use.
// Sync's follow.Follower serialises catalogue changes and owns one
// goroutine, stopped by Close.
//
// # Caveats
//
// Not implemented: the scale subresource, conversion webhooks, CEL
// validation rules (x-kubernetes-validations), allOf/anyOf/oneOf/not, list
// and map types (x-kubernetes-list-type), defaulting on read, and the
// Terminating phase of a definition being deleted (its objects are deleted
// right after it; the DELETE answers it as kube marks it).
package crd
