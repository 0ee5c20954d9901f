// Package interop holds the tests that need heavy test-only dependencies
// (an embedded etcd server, client-go, k8s.io/api, kubectl), kept in their own
// module so that programs importing listwatch's libraries never inherit them.
package interop
