package interop

import (
	"testing"

	"github.com/listwatch/listwatch/internal/server/resource"
)

// Builtin is the server's built-in resource group/version/plural; it
// fails t when the server serves none.
func Builtin(t testing.TB, group, version, plural string) *resource.Resource {
	t.Helper()
	for _, r := range resource.Builtins() {
		if r.Group == group && r.Version == version && r.Plural == plural {
			return r
		}
	}
	t.Fatalf("%s/%s %s is not served", group, version, plural)
	return nil
}
