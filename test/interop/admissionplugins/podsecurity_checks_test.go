package admissionplugins

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	psaapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"

	"github.com/listwatch/listwatch/internal/server/admission/podsecurity"
)

// TestPodSecurityChecksAsKubes evaluates every pod of kube's pod security
// fixtures (k8s.io/pod-security-admission test/testdata: every level and
// version, passing and failing pods of each check) under every level at
// every version from v1.0 to past the newest check, and latest, with our
// checks and with kube's policy evaluator: the verdicts, reasons and
// details must be equal, in the same order.
func TestPodSecurityChecksAsKubes(t *testing.T) {
	var files []string
	err := filepath.WalkDir(fixturesRoot(t), func(path string, _ os.DirEntry, err error) error {
		if strings.HasSuffix(path, ".yaml") {
			files = append(files, path)
		}
		return err
	})
	if err != nil || len(files) < 1000 {
		t.Fatalf("kube's fixtures: %d files, %v", len(files), err)
	}
	kube, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	type levelVersion struct {
		kube psaapi.LevelVersion
		ours podsecurity.LevelVersion
	}
	var lvs []levelVersion
	for _, level := range []string{"privileged", "baseline", "restricted"} {
		for minor := 0; minor <= 40; minor++ {
			lvs = append(lvs, levelVersion{
				psaapi.LevelVersion{Level: psaapi.Level(level), Version: psaapi.MajorMinorVersion(1, minor)},
				podsecurity.LevelVersion{Level: podsecurity.Level(level), Version: podsecurity.Version{Minor: minor}}})
		}
		lvs = append(lvs, levelVersion{
			psaapi.LevelVersion{Level: psaapi.Level(level), Version: psaapi.LatestVersion()},
			podsecurity.LevelVersion{Level: podsecurity.Level(level), Version: podsecurity.LatestVersion}})
	}
	refused := 0
	for _, f := range files {
		pod, obj := readFixture(t, f)
		ours, err := podsecurity.Decode(obj)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		for _, lv := range lvs {
			want := policy.AggregateCheckResults(kube.EvaluatePod(lv.kube, &pod.ObjectMeta, &pod.Spec))
			got := podsecurity.Evaluate(lv.ours, ours)
			if !want.Allowed {
				refused++
			}
			if want.Allowed != got.Allowed() || want.ForbiddenReason() != got.Reason() || want.ForbiddenDetail() != got.Detail() {
				t.Errorf("%s at %s (-kube +ours):\n%s", f, lv.ours,
					cmp.Diff(want.ForbiddenDetail(), got.Detail()))
			}
		}
	}
	t.Logf("%d fixtures, %d evaluations, %d refusals", len(files), len(files)*len(lvs), refused)
}
