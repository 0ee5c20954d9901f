package interop

import (
	"os"
	"strings"
	"testing"
)

// TestServerVersionIsTheAPIServed checks that /version names the release
// whose API the server serves, the one this module's k8s.io/api is cut
// from (v0.37.x is Kubernetes 1.37): clients check their version skew
// against it.
func TestServerVersionIsTheAPIServed(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	got, err := typedClientset(t, lw.URL).Discovery().ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	api := moduleVersion(t, "k8s.io/api")
	parts := strings.Split(strings.TrimPrefix(api, "v"), ".")
	if len(parts) < 3 {
		t.Fatalf("k8s.io/api version %q", api)
	}
	if got.Major != "1" || got.Minor != parts[1] || !strings.HasPrefix(got.GitVersion, "v1."+parts[1]+"."+parts[2]) {
		t.Errorf("server version %+v, want 1.%s.%s (k8s.io/api %s)", got, parts[1], parts[2], api)
	}
}

// moduleVersion is the version of module path this module builds with:
// its replace directive's, else its requirement's.
func moduleVersion(t *testing.T, path string) string {
	t.Helper()
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var required, replaced string
	for line := range strings.Lines(string(mod)) {
		switch f := strings.Fields(line); {
		case len(f) == 4 && f[0] == path && f[1] == "=>":
			replaced = f[3]
		case len(f) >= 2 && f[0] == path:
			required = f[1]
		}
	}
	if replaced != "" {
		return replaced
	}
	return required
}
