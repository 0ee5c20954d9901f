// Package client holds the tests of the client library's package client that
// need a listwatch server: they run it in the test process, which the
// client library's own module cannot import.
package client
