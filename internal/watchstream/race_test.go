//go:build race

package watchstream

// raceBuild: the race detector's sync.Pool drops a share of what is put,
// so that a test of allocations cannot count on it.
const raceBuild = true
