// Package repotest holds the tests that guard the whole repository's shape:
// every package has a package comment, and the dependency graph keeps the
// client library free of server and storage code and the product free of
// k8s.io/apiserver, client-go and k8s.io/api (DESIGN.md, principle 6).
package repotest
