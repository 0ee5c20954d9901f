package metrics

import "testing"

// TestUserCategory: user names reach the label as kube's few values
// only, so that neither the label set nor what it tells grows with users.
func TestUserCategory(t *testing.T) {
	for name, want := range map[string]string{
		"admin":   "admin",
		"kubelet": "kubelet",
		"system:serviceaccount:kube-system:default": "system:serviceaccount:kube-system:default",
		"system:serviceaccount:default:default":     "other",
		"alice@example.com":                         "email_id",
		"system:admin":                              "other",
		"":                                          "other",
	} {
		if got := userCategory(name); got != want {
			t.Errorf("%q: %q, want %q", name, got, want)
		}
	}
}
