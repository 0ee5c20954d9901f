package server

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

const (
	evictPods = "/api/v1/namespaces/default/pods"
	evictPDBs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
)

// evictionFixture makes pods and budgets in one server.
type evictionFixture struct {
	t  *testing.T
	ts *httptest.Server
}

// pod creates pod name with label app=app; a running pod is Running and,
// if ready, Ready, as a kubelet would report it.
func (f evictionFixture) pod(name, app, phase string, ready bool, meta string) api.Object {
	f.t.Helper()
	body := `{"metadata":{"name":"` + name + `","labels":{"app":"` + app + `"}` + meta + `},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"i"}]}}`
	if code, got := call(f.t, f.ts, "POST", evictPods, mediaJSON, body); code != http.StatusCreated {
		f.t.Fatalf("pod %s: %d %v", name, code, got)
	}
	if phase != "Pending" {
		readiness := map[bool]string{true: "True", false: "False"}[ready]
		f.status(evictPods+"/"+name, `{"status":{"phase":"`+phase+`","conditions":[{"type":"Ready","status":"`+readiness+`"}]}}`)
	}
	_, pod := call(f.t, f.ts, "GET", evictPods+"/"+name, "", "")
	return pod
}

// budget creates budget name selecting app with the status given.
func (f evictionFixture) budget(name, app, spec, status string) {
	f.t.Helper()
	body := `{"metadata":{"name":"` + name + `"},"spec":{"selector":{"matchLabels":{"app":"` + app + `"}}` + spec + `}}`
	if code, got := call(f.t, f.ts, "POST", evictPDBs, mediaJSON, body); code != http.StatusCreated {
		f.t.Fatalf("budget %s: %d %v", name, code, got)
	}
	f.status(evictPDBs+"/"+name, `{"status":`+status+`}`)
}

func (f evictionFixture) status(path, patch string) {
	f.t.Helper()
	if r := do(f.t, f.ts, "PATCH", path+"/status", "", patch); r.code != http.StatusOK {
		f.t.Fatalf("status of %s: %d %v", path, r.code, r.obj)
	}
}

// evict posts an Eviction of pod name and returns the response.
func (f evictionFixture) evict(name, query, body string) response {
	f.t.Helper()
	if body == "" {
		body = `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"` + name + `"}}`
	}
	return do(f.t, f.ts, "POST", evictPods+"/"+name+"/eviction"+query, "", body)
}

func (f evictionFixture) gone(name string) bool {
	f.t.Helper()
	code, _ := call(f.t, f.ts, "GET", evictPods+"/"+name, "", "")
	return code == http.StatusNotFound
}

// TestEviction evicts pods through pods/eviction as kube's EvictionREST:
// a pending or terminal pod goes at once; a running one if its budget
// allows a disruption, which is then taken and recorded; kube's 429, 403
// and 500 answers otherwise, and its checks of the Eviction itself.
func TestEviction(t *testing.T) {
	f := evictionFixture{t, newTestServer(t)}
	success := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Success", "code": json.Number("201")}

	// Pending, terminal or unbudgeted: deleted, the running one marked
	// DisruptionTarget first (a finalizer keeps it to be seen).
	f.pod("pending", "none", "Pending", false, "")
	f.pod("done", "web", "Succeeded", false, "")
	f.pod("free", "none", "Running", true, `,"finalizers":["example.com/keep"]`)
	for _, name := range []string{"pending", "done"} {
		if r := f.evict(name, "", ""); r.code != http.StatusCreated || !cmp.Equal(map[string]any(r.obj), success) || !f.gone(name) {
			t.Errorf("%s: %d %v, gone %v", name, r.code, r.obj, f.gone(name))
		}
	}
	if r := f.evict("free", "", ""); r.code != http.StatusCreated {
		t.Fatalf("free: %d %v", r.code, r.obj)
	}
	_, free := call(t, f.ts, "GET", evictPods+"/free", "", "")
	cond, _ := at(free, "status.conditions.1").(map[string]any)
	if free.Metadata()["deletionTimestamp"] == nil || cond["type"] != "DisruptionTarget" || cond["status"] != "True" ||
		cond["reason"] != "EvictionByEvictionAPI" || cond["message"] != "Eviction API: evicting" || cond["lastTransitionTime"] == nil {
		t.Errorf("evicted pod held by a finalizer: %v", free)
	}

	// A budget allowing one disruption lets one pod go, and records it.
	f.budget("web", "web", `,"minAvailable":1`, `{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":2,"desiredHealthy":1,"expectedPods":2}`)
	f.pod("web-1", "web", "Running", true, "")
	f.pod("web-2", "web", "Running", true, "")
	if r := f.evict("web-1", "", ""); r.code != http.StatusCreated || !f.gone("web-1") {
		t.Fatalf("web-1: %d %v", r.code, r.obj)
	}
	_, pdb := call(t, f.ts, "GET", evictPDBs+"/web", "", "")
	cond, _ = at(pdb, "status.conditions.0").(map[string]any)
	if at(pdb, "status.disruptionsAllowed") != "0" || at(pdb, "status.disruptedPods.web-1") == nil ||
		cond["type"] != "DisruptionAllowed" || cond["status"] != "False" || cond["reason"] != "InsufficientPods" || cond["observedGeneration"] != json.Number("1") || cond["message"] != "" {
		t.Errorf("budget after an eviction: %v", pdb["status"])
	}
	// Now it allows none: 429 with the budget's cause, no Retry-After.
	r := f.evict("web-2", "", "")
	wantCause := []any{map[string]any{"reason": "DisruptionBudget", "message": "The disruption budget web does not allow evicting pods currently"}}
	if r.code != http.StatusTooManyRequests || r.obj["message"] != violatesBudget || r.obj["reason"] != "TooManyRequests" ||
		!cmp.Equal(at(r.obj, "details.causes"), wantCause) || r.header.Get("Retry-After") != "" || f.gone("web-2") {
		t.Errorf("web-2: %d %v %v", r.code, r.obj, r.header)
	}

	// A budget whose status is older than its spec: 429, retry in 10 s.
	f.budget("stale", "stale", `,"maxUnavailable":1`, `{"observedGeneration":0,"disruptionsAllowed":5,"currentHealthy":1,"desiredHealthy":0,"expectedPods":1}`)
	f.pod("stale", "stale", "Running", true, "")
	r = f.evict("stale", "", "")
	wantCause = []any{map[string]any{"reason": "DisruptionBudget", "message": "The disruption budget stale is still being processed by the server."}}
	if r.code != http.StatusTooManyRequests || !cmp.Equal(at(r.obj, "details.causes"), wantCause) || r.header.Get("Retry-After") != "10" {
		t.Errorf("stale: %d %v %v", r.code, r.obj, r.header)
	}

	// A negative budget (kube's 403 "pdb disruptions allowed is negative")
	// cannot be written: status validation refuses it.
	f.budget("broken", "broken", `,"maxUnavailable":1`, `{"observedGeneration":1,"currentHealthy":1,"desiredHealthy":0,"expectedPods":1}`)
	if r := do(t, f.ts, "PATCH", evictPDBs+"/broken/status", "", `{"status":{"disruptionsAllowed":-1}}`); r.code != http.StatusUnprocessableEntity {
		t.Errorf("a negative budget's status: %d %v, want 422", r.code, r.obj)
	}

	// Two budgets: a Failure Status with code 500, written with HTTP 201.
	f.budget("twice", "web", `,"maxUnavailable":1`, `{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":1,"desiredHealthy":0,"expectedPods":1}`)
	r = f.evict("web-2", "", "")
	want := map[string]any{"kind": "Status", "apiVersion": "v1", "metadata": map[string]any{}, "status": "Failure", "message": severalBudgets, "code": json.Number("500")}
	if r.code != http.StatusCreated || !cmp.Equal(map[string]any(r.obj), want) || f.gone("web-2") {
		t.Errorf("two budgets: %d %v", r.code, r.obj)
	}

	// An unready pod goes past a budget that is healthy without it, or
	// that lets unhealthy pods go, and takes nothing from it.
	f.budget("healthy", "healthy", `,"minAvailable":1`, `{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":2}`)
	f.budget("always", "always", `,"minAvailable":5,"unhealthyPodEvictionPolicy":"AlwaysAllow"`, `{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":5,"expectedPods":5}`)
	f.budget("ifhealthy", "ifhealthy", `,"minAvailable":5`, `{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":0,"desiredHealthy":5,"expectedPods":5}`)
	for name, code := range map[string]int{"healthy": http.StatusCreated, "always": http.StatusCreated, "ifhealthy": http.StatusTooManyRequests} {
		f.pod(name, name, "Running", false, "")
		if r := f.evict(name, "", ""); r.code != code || f.gone(name) != (code == http.StatusCreated) {
			t.Errorf("unready pod under budget %s: %d %v", name, r.code, r.obj)
		}
	}
	if r := f.evict("ifhealthy", "", ""); at(r.obj, "details.causes.0.message") != "The disruption budget ifhealthy needs 5 healthy pods and has 0 currently" {
		t.Errorf("unhealthy budget: %v", r.obj)
	}
	if _, pdb := call(t, f.ts, "GET", evictPDBs+"/healthy", "", ""); at(pdb, "status.disruptedPods") != nil {
		t.Errorf("an unready pod's eviction was recorded: %v", pdb["status"])
	}

	// A dry run (in the query or the Eviction's options) deletes nothing
	// and takes nothing from the budget.
	f.budget("dry", "dry", `,"maxUnavailable":1`, `{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":1,"desiredHealthy":0,"expectedPods":1}`)
	dry := f.pod("dry", "dry", "Running", true, "")
	for _, r := range []response{
		f.evict("dry", "?dryRun=All", ""),
		f.evict("dry", "", `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"dry"},"deleteOptions":{"dryRun":["All"]}}`),
	} {
		if r.code != http.StatusCreated || !cmp.Equal(map[string]any(r.obj), success) {
			t.Errorf("dry run: %d %v", r.code, r.obj)
		}
	}
	_, pdb = call(t, f.ts, "GET", evictPDBs+"/dry", "", "")
	if _, got := call(t, f.ts, "GET", evictPods+"/dry", "", ""); got.ResourceVersion() != dry.ResourceVersion() || at(pdb, "status.disruptionsAllowed") != "1" {
		t.Errorf("a dry run wrote: pod %v, budget %v", got, pdb["status"])
	}

	// Preconditions are the pod's (a pod no budget selects: one that
	// does would have lost its disruption before they are checked).
	solo := f.pod("solo", "none", "Running", true, "")
	tests := []struct {
		name, pod, query, body string
		code                   int
		message                string
	}{
		{"other name", "dry", "", `{"metadata":{"name":"web-2"}}`, 400, "name in URL does not match name in Eviction object"},
		{"other namespace", "dry", "", `{"metadata":{"name":"dry","namespace":"x"}}`, 400,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"options not an object", "dry", "", `{"metadata":{"name":"dry"},"deleteOptions":[]}`, 400,
			"the body is not a valid Eviction: deleteOptions is not an object"},
		{"other kind", "dry", "", `{"apiVersion":"v1","kind":"Eviction","metadata":{"name":"dry"}}`, 400,
			"the API version in the data (v1) does not match the expected API version (policy/v1)"},
		{"store read errors", "dry", "", `{"metadata":{"name":"dry"},"deleteOptions":{"ignoreStoreReadErrorWithClusterBreakingPotential":true}}`, 422,
			`Eviction.policy "dry" is invalid: deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be set for pod eviction, try after removing the option`},
		{"dry runs differ", "dry", "?dryRun=All", `{"metadata":{"name":"dry"},"deleteOptions":{"dryRun":["Some"]}}`, 500,
			"Non-matching dry-run options in request and content: [All] and [Some]"},
		{"missing pod", "nope", "", "", 404, `pods "nope" not found`},
		{"other uid", "solo", "", `{"metadata":{"name":"solo"},"deleteOptions":{"preconditions":{"uid":"u"}}}`, 409,
			`Operation cannot be fulfilled on Pod "solo": the UID in the precondition (u) does not match the UID in record (` + solo.UID() + `). The object might have been deleted and then recreated`},
		{"stale resourceVersion", "solo", "", `{"metadata":{"name":"solo"},"deleteOptions":{"preconditions":{"resourceVersion":"1"}}}`, 409,
			`Operation cannot be fulfilled on Pod "solo": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record (` + solo.ResourceVersion() + `). The object might have been modified`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := f.evict(tt.pod, tt.query, tt.body)
			if r.code != tt.code || r.obj["message"] != tt.message {
				t.Errorf("got %d %q, want %d %q", r.code, r.obj["message"], tt.code, tt.message)
			}
		})
	}
	// The pod's own uid and resourceVersion as preconditions: evicted.
	body := `{"metadata":{"name":"solo"},"deleteOptions":{"preconditions":{"uid":"` + solo.UID() + `","resourceVersion":"` + solo.ResourceVersion() + `"}}}`
	if r := f.evict("solo", "", body); r.code != http.StatusCreated || !f.gone("solo") {
		t.Errorf("with preconditions: %d %v", r.code, r.obj)
	}
}

// TestEvictionAdmission: admission sees a CREATE of pods/eviction whose
// object is the Eviction, of kind policy/v1 Eviction whichever version
// was sent, and may refuse it; the pod then stays.
func TestEvictionAdmission(t *testing.T) {
	f := evictionFixture{t, newTestServer(t)}
	for _, c := range []struct{ path, body string }{
		{admissionV1 + "/validatingadmissionpolicies", `{"metadata":{"name":"evictions"},"spec":{
			"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods/eviction"]}]},
			"validations":[{"expression":"request.kind.group == 'policy' && request.kind.kind == 'Eviction' && request.subResource == 'eviction' && object.apiVersion == 'policy/v1'"},
				{"expression":"object.metadata.name != 'keep'","message":"keep stays"},
				{"expression":"!has(object.deleteOptions) || !has(object.deleteOptions.gracePeriodSeconds) || object.deleteOptions.dryRun == ['All']","message":"dry run not propagated"}]}}`},
		{admissionV1 + "/validatingadmissionpolicybindings", `{"metadata":{"name":"evictions"},"spec":{"policyName":"evictions","validationActions":["Deny"]}}`},
	} {
		if code, m := call(t, f.ts, "POST", c.path, mediaJSON, c.body); code != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", c.path, code, m)
		}
	}
	f.pod("keep", "a", "Running", true, "")
	f.pod("go", "a", "Running", true, "")
	if r := f.evict("keep", "", ""); r.code != http.StatusUnprocessableEntity || !strings.Contains(r.obj["message"].(string), "keep stays") || f.gone("keep") {
		t.Errorf("keep: %d %v", r.code, r.obj)
	}
	// The query's dry run reaches the Eviction's options, as kube's
	// propagateDryRun writes it there before validating admission.
	if r := f.evict("go", "?dryRun=All", `{"metadata":{"name":"go"},"deleteOptions":{"gracePeriodSeconds":5}}`); r.code != http.StatusCreated || f.gone("go") {
		t.Errorf("go, dry run: %d %v", r.code, r.obj)
	}
	if r := f.evict("go", "", `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"go"}}`); r.code != http.StatusCreated || !f.gone("go") {
		t.Errorf("go: %d %v", r.code, r.obj)
	}
}

// TestEvictionsRace evicts pods of one budget allowing one disruption all
// at once: the budget's compare-and-swap lets exactly one go.
func TestEvictionsRace(t *testing.T) {
	f := evictionFixture{t, newTestServer(t)}
	f.budget("one", "race", `,"maxUnavailable":1`, `{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":4,"desiredHealthy":3,"expectedPods":4}`)
	names := []string{"r1", "r2", "r3", "r4"}
	for _, name := range names {
		f.pod(name, "race", "Running", true, "")
	}
	codes := make([]int, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { // no t.Fatal off the test's goroutine: an error is code 0
			resp, err := f.ts.Client().Post(f.ts.URL+evictPods+"/"+name+"/eviction", mediaJSON, strings.NewReader(`{"metadata":{"name":"`+name+`"}}`))
			if err == nil {
				codes[i] = resp.StatusCode
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
	var evicted []string
	for i, name := range names {
		switch codes[i] {
		case http.StatusCreated:
			evicted = append(evicted, name)
		case http.StatusTooManyRequests:
		default:
			t.Errorf("%s: %d", name, codes[i])
		}
	}
	_, pdb := call(t, f.ts, "GET", evictPDBs+"/one", "", "")
	disrupted, _ := at(pdb, "status.disruptedPods").(map[string]any)
	if len(evicted) != 1 || len(disrupted) != 1 || disrupted[evicted[0]] == nil || at(pdb, "status.disruptionsAllowed") != "0" || !f.gone(evicted[0]) {
		t.Errorf("evicted %v, budget %v", evicted, pdb["status"])
	}
}
