package server

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/resource"
)

// TestTimeoutSeconds: a timeoutSeconds too long for a Duration is served
// as the longest one, where it answered 500; up to
// int64's limit it opens the watch, past it, negative or not a number it is
// a 400 on a watch and on a list alike.
func TestTimeoutSeconds(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	if code, _ := call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"a"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	for _, v := range []string{"10000000000", strconv.FormatInt(maxTimeoutSeconds, 10), strconv.FormatInt(maxTimeoutSeconds+1, 10), "9223372036854775807"} {
		w := openWatch(t, ts.Client(), ts.URL+cms+"?watch=true&timeoutSeconds="+v)
		if evs := w.next(1, false); evs[0].Type != api.Added || evs[0].Object.Name() != "a" {
			t.Errorf("timeoutSeconds=%s: first event %v", v, evs[0])
		}
		w.resp.Body.Close()
		if code, _ := call(t, ts, "GET", cms+"?timeoutSeconds="+v, "", ""); code != http.StatusOK {
			t.Errorf("list with timeoutSeconds=%s: %d", v, code)
		}
	}
	for _, v := range []string{"9223372036854775808", "-1", "1.5", "ten"} {
		for _, watch := range []string{"&watch=true", ""} {
			code, status := call(t, ts, "GET", cms+"?timeoutSeconds="+v+watch, "", "")
			want := fmt.Sprintf("invalid timeoutSeconds %q: must be a non-negative integer", v)
			if code != http.StatusBadRequest || status["reason"] != "BadRequest" || status["message"] != want {
				t.Errorf("timeoutSeconds=%s%s: %d %v, want 400 %q", v, watch, code, status, want)
			}
		}
	}
}

// TestFutureResourceVersion: a watch or a get from a resourceVersion the
// store has not reached is kube's 504 "Too large resource version" after
// kube's 3 s wait, where the watch hung silently; from
// the current one it is served at once.
func TestFutureResourceVersion(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	code, created := call(t, ts, "POST", cms, mediaJSON, `{"metadata":{"name":"a"}}`)
	if code != http.StatusCreated {
		t.Fatalf("create: %d", code)
	}
	cur, _ := strconv.ParseInt(created.ResourceVersion(), 10, 64)
	w := openWatch(t, ts.Client(), ts.URL+cms+"?watch=true&resourceVersion="+created.ResourceVersion())
	if code, _ := call(t, ts, "PUT", cms+"/a", mediaJSON, `{"metadata":{"name":"a"},"data":{"k":"v"}}`); code != http.StatusOK {
		t.Fatalf("update: %d", code)
	}
	if evs := w.next(1, false); evs[0].Type != api.Modified {
		t.Errorf("watch from the current resourceVersion: %v", evs[0])
	}
	if code, _ := call(t, ts, "GET", cms+"/a?resourceVersion="+created.ResourceVersion(), "", ""); code != http.StatusOK {
		t.Errorf("get at a reached resourceVersion: %d", code)
	}
	future := strconv.FormatInt(cur+100, 10)
	for _, path := range []string{cms + "?watch=true&resourceVersion=" + future, cms + "/a?resourceVersion=" + future} {
		start := time.Now()
		code, status := call(t, ts, "GET", path, "", "")
		waited := time.Since(start)
		// current: the store's revision, which the controller Lease's
		// renewals move on
		want := fmt.Sprintf("Too large resource version: %s, current: ", future)
		msg, _ := status["message"].(string)
		current, err := strconv.ParseInt(strings.TrimPrefix(msg, want), 10, 64)
		details, _ := status["details"].(map[string]any)
		causes, _ := details["causes"].([]any)
		if code != http.StatusGatewayTimeout || status["reason"] != "Timeout" || !strings.HasPrefix(msg, want) || err != nil || current <= cur || current >= cur+100 ||
			fmt.Sprint(details["retryAfterSeconds"]) != "1" || len(causes) != 1 || causes[0].(map[string]any)["reason"] != "ResourceVersionTooLarge" {
			t.Errorf("GET %s: %d %v, want 504 %q<revision after %d> with a ResourceVersionTooLarge cause", path, code, status, want, cur)
		}
		if waited < freshnessWait {
			t.Errorf("GET %s answered after %v, before kube's %v wait", path, waited, freshnessWait)
		}
	}
}

// TestGetResourceVersion: a get's resourceVersion is checked as a list's
// is, where it was ignored.
func TestGetResourceVersion(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	const cm = "/api/v1/namespaces/default/configmaps/a"
	call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"a"}}`)
	for _, rv := range []string{"abc", "-1", "1.0", "18446744073709551616"} {
		code, status := call(t, ts, "GET", cm+"?resourceVersion="+rv, "", "")
		if want := fmt.Sprintf("invalid resource version %q", rv); code != http.StatusBadRequest || status["message"] != want {
			t.Errorf("resourceVersion=%s: %d %v, want 400 %q", rv, code, status, want)
		}
	}
	for _, rv := range []string{"", "0", "1"} {
		if code, _ := call(t, ts, "GET", cm+"?resourceVersion="+rv, "", ""); code != http.StatusOK {
			t.Errorf("resourceVersion=%q: %d, want 200", rv, code)
		}
		s.caches.mu.Lock()
		_, cached := s.caches.byGVR[resource.GVR{Version: "v1", Plural: "configmaps"}]
		s.caches.mu.Unlock()
		if want := rv == "1"; cached != want {
			t.Errorf("after a get at resourceVersion=%q the configmaps cache runs: %v, want %v", rv, cached, want)
		}
	}
}

// TestBoolParams: watch, allowWatchBookmarks and force read as kube's
// parameter codec reads a bool: absent, "0" or "false" are false, any
// other value true; so force=maybe forces, as on kube-apiserver.
func TestBoolParams(t *testing.T) {
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	for v, watch := range map[string]bool{"true": true, "1": true, "yes": true, "": true, "0": false, "false": false, "FALSE": false} {
		if got := boolParam(map[string][]string{"watch": {v}}, "watch"); got != watch {
			t.Errorf("watch=%q read as %v, want %v", v, got, watch)
		}
	}
	if boolParam(nil, "watch") {
		t.Error("an absent watch read as true")
	}
	// A list answers at once; a watch would not.
	if code, list := call(t, ts, "GET", cms+"?watch=0", "", ""); code != http.StatusOK || list["kind"] != "ConfigMapList" {
		t.Errorf("watch=0: %d %v, want a list", code, list)
	}
	apply := func(manager, value, force string) int {
		code, _ := send(t, ts, "PATCH", cms+"/a?fieldManager="+manager+force, mediaApplyPatchYAML, "",
			"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: \""+value+"\"\n")
		return code
	}
	if code := apply("one", "1", ""); code != http.StatusCreated {
		t.Fatalf("apply: %d", code)
	}
	for _, force := range []string{"", "&force=false", "&force=0"} {
		if code := apply("two", "2", force); code != http.StatusConflict {
			t.Errorf("conflicting apply with %q: %d, want 409", force, code)
		}
	}
	if code := apply("two", "2", "&force=maybe"); code != http.StatusOK {
		t.Errorf("conflicting apply with force=maybe: %d, want 200", code)
	}
}

// TestFieldManagerLength: kube's 128 bytes of fieldManager pass on a
// create; one more is its 422.
func TestFieldManagerLength(t *testing.T) {
	ts := newTestServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	if code, obj := call(t, ts, "POST", cms+"?fieldManager="+strings.Repeat("m", maxFieldManagerLen), mediaJSON, `{"metadata":{"name":"a"}}`); code != http.StatusCreated {
		t.Errorf("fieldManager of 128 bytes: %d %v", code, obj)
	}
	code, status := call(t, ts, "POST", cms+"?fieldManager="+strings.Repeat("m", maxFieldManagerLen+1), mediaJSON, `{"metadata":{"name":"b"}}`)
	if causes := causes(status); code != http.StatusUnprocessableEntity || len(causes) != 1 || !strings.Contains(causes[0], "Too long: may not be more than 128 bytes") {
		t.Errorf("fieldManager of 129 bytes: %d %v", code, status)
	}
}
