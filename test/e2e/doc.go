// Package e2e tests the listwatch binary as a user runs it: it builds
// cmd/listwatch, starts `listwatch serve` on a loopback port with a
// temporary data directory, and drives it with the CLI commands and the
// client library over a real socket.
package e2e
