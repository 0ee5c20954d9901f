package interop

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/warning"

	"github.com/listwatch/listwatch/internal/server/apierror"
)

// TestWarningsAsKube gives the same warnings to kube-apiserver's recorder
// (endpoints/filters.WithWarningRecorder) and to ours and compares the
// Warning headers: which are kept, cut, deduplicated, dropped and how
// they are quoted, around and past the 4 KiB total.
func TestWarningsAsKube(t *testing.T) {
	pieces := []string{
		"short", `with "quotes" and \backslash`, "é multi-byte ü", "ctl\x01char", "bad \xff utf-8",
		"line\u2028separator", strings.Repeat("x", 255), strings.Repeat("é", 256), strings.Repeat("y", 257),
		strings.Repeat("z", 1000) + "\xff", strings.Repeat("w", 4096), "",
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for run := range 200 {
		var texts []string
		for range rng.IntN(40) {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(3) > 0 && p != "" { // mostly distinct texts, some repeated
				p = fmt.Sprintf("%d %s", rng.IntN(20), p)
			}
			texts = append(texts, p)
		}
		kube := httptest.NewRecorder()
		filters.WithWarningRecorder(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			for _, text := range texts {
				warning.AddWarning(r.Context(), "", text)
			}
		})).ServeHTTP(kube, httptest.NewRequest(http.MethodGet, "/", nil))
		ours := http.Header{}
		w := apierror.NewWarnings(ours)
		for _, text := range texts {
			w.Add(text)
		}
		if diff := cmp.Diff(kube.Header().Values("Warning"), ours.Values("Warning")); diff != "" {
			t.Fatalf("run %d: Warning headers (-kube +listwatch):\n%s", run, diff)
		}
	}
}
