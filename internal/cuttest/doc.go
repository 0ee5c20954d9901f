// Package cuttest runs List-Watch clients over a network that breaks, for
// tests: a loopback TCP proxy that cuts the connections through it (all at
// once, one at random, or every so often), an in-process server that
// counts the LISTs each client makes, and a recorder of how late a handler
// sees each write. The tests of this module and of test/interop use it to
// measure an informer's lag while its connections are cut, ours beside
// client-go's.
//
// Everything here is safe for concurrent use; every goroutine it starts
// stops when the test that started it ends.
package cuttest
