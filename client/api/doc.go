// Package api holds the Kubernetes wire types that listwatch's server and
// client share: object and list metadata, Status errors, watch events, the
// Table form, discovery documents, and Object, a map-backed object for any
// kind. Field names and JSON shapes are those of k8s.io/apimachinery's
// meta/v1, so documents round-trip with kube-apiserver and client-go.
//
// The package is JSON only and has no server or client logic.
package api
