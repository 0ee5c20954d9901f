// Package controller holds the tests of the client library's package controller that
// need a listwatch server: they run it in the test process, which the
// client library's own module cannot import.
package controller
