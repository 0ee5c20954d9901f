package server

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/audit/audittest"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/storage/memory"
)

const testAuditPolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  nonResourceURLs: ["/healthz*"]
- level: RequestResponse
  resources:
  - group: ""
    resources: [configmaps, secrets]
- level: Metadata
  omitStages: [RequestReceived]
`

// auditedServer is a Server on a memory store logging as its policy says.
type auditedServer struct {
	s    *Server
	ts   *httptest.Server
	log  *audit.Log
	path string
}

func newAuditedServer(t *testing.T, policy string, cfg Config) *auditedServer {
	t.Helper()
	p, _, err := audit.ParsePolicy([]byte(policy))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "audit.log")
	l, err := audit.OpenLog(audit.LogConfig{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	store := memory.New()
	cfg.Storage, cfg.AuditPolicy, cfg.AuditLog = store, p, l
	s, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	a := &auditedServer{s: s, ts: ts, log: l, path: path}
	t.Cleanup(func() { a.close(); ts.Close(); store.Close() })
	return a
}

// close stops the server, its watches' ends logged, and the log.
func (a *auditedServer) close() {
	a.s.Close()
	a.log.Close()
}

// events are the events written so far: a request's last one is written
// before its response ends (Log.Write waits for it), a detached watch's
// once close has returned.
func (a *auditedServer) events(t *testing.T) []audit.Event {
	t.Helper()
	return audittest.ReadLog(t, a.path)
}

// ofRequest are the events of the request with audit ID id, their stages.
func ofRequest(evs []audit.Event, id string) (out []audit.Event, stages []audit.Stage) {
	for _, ev := range evs {
		if ev.AuditID == id {
			out = append(out, ev)
			stages = append(stages, ev.Stage)
		}
	}
	return out, stages
}

func TestAuditLevelsAndStages(t *testing.T) {
	a := newAuditedServer(t, testAuditPolicy, Config{})
	const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`
	created := exchange(t, a.ts, "POST", "/api/v1/namespaces/default/configmaps", http.Header{"Content-Type": {mediaJSON}, "User-Agent": {"test/1"}}, cm)
	missing := exchange(t, a.ts, "GET", "/api/v1/namespaces/default/configmaps/nope", http.Header{"Audit-ID": {"my-id"}}, "")
	secret := exchange(t, a.ts, "POST", "/api/v1/namespaces/default/secrets", http.Header{"Content-Type": {mediaJSON}}, `{"metadata":{"name":"s"},"stringData":{"password":"hunter2"}}`)
	version := exchange(t, a.ts, "GET", "/version", nil, "")
	healthz, _ := roundTrip(t, a.ts.Client(), "GET", a.ts.URL+"/healthz", nil, "")
	if created.code != 201 || missing.code != 404 || secret.code != 201 || version.code != 200 || healthz.StatusCode != 200 {
		t.Fatalf("codes %d %d %d %d %d", created.code, missing.code, secret.code, version.code, healthz.StatusCode)
	}
	if got := missing.header.Get("Audit-ID"); got != "my-id" {
		t.Errorf("Audit-ID %q, want the client's", got)
	}
	if id := healthz.Header.Get("Audit-ID"); id == "" {
		t.Error("a request the policy does not log has no Audit-ID")
	}
	evs := a.events(t)

	cmEvents, stages := ofRequest(evs, created.header.Get("Audit-ID"))
	if diff := cmp.Diff([]audit.Stage{audit.StageRequestReceived, audit.StageResponseComplete}, stages); diff != "" {
		t.Fatalf("create's stages (-want +got)\n%s", diff)
	}
	received, complete := cmEvents[0], cmEvents[1]
	if received.RequestObject != nil || received.ResponseStatus != nil || received.StageTimestamp != received.RequestReceivedTimestamp {
		t.Errorf("RequestReceived: %+v, want no objects, no status, its stage at its arrival", received)
	}
	wantMeta := audit.Event{
		Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: audit.LevelRequestResponse, Stage: audit.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/default/configmaps", Verb: "create",
		User: audit.UserInfo{Username: "system:anonymous", Groups: []string{"system:unauthenticated"}}, SourceIPs: []string{"127.0.0.1"}, UserAgent: "test/1",
		ObjectRef:      &audit.ObjectReference{Resource: "configmaps", Namespace: "default", Name: "c", APIVersion: "v1"}, // the name from the body, as kube
		ResponseStatus: &api.Status{Code: 201},
		Annotations:    map[string]string{audit.DecisionAnnotation: "allow", audit.ReasonAnnotation: ""},
	}
	ignore := cmpopts.IgnoreFields(audit.Event{}, "AuditID", "RequestObject", "ResponseObject", "RequestReceivedTimestamp", "StageTimestamp")
	if diff := cmp.Diff(wantMeta, complete, ignore); diff != "" {
		t.Errorf("create's event (-want +got)\n%s", diff)
	}
	if string(complete.RequestObject) != cm {
		t.Errorf("requestObject %s, want the body", complete.RequestObject)
	}
	if resp, err := api.ParseObject(complete.ResponseObject); err != nil || resp.UID() == "" || resp.UID() != created.obj.UID() {
		t.Errorf("responseObject %s (%v), want the created object", complete.ResponseObject, err)
	}

	missed, stages := ofRequest(evs, "my-id")
	if len(missed) != 2 || stages[1] != audit.StageResponseComplete {
		t.Fatalf("the missing configmap's events: %v", stages)
	}
	wantStatus := &api.Status{Status: api.StatusFailure, Message: `configmaps "nope" not found`, Reason: api.StatusReasonNotFound, Code: 404,
		Details: &api.StatusDetails{Name: "nope", Kind: "configmaps"}}
	if diff := cmp.Diff(wantStatus, missed[1].ResponseStatus); diff != "" || missed[1].ResponseObject != nil {
		t.Errorf("a failure's status (-want +got)\n%s\nresponseObject %s, want none", diff, missed[1].ResponseObject)
	}

	secrets, _ := ofRequest(evs, secret.header.Get("Audit-ID"))
	for _, ev := range secrets {
		if ev.RequestObject != nil || ev.ResponseObject != nil {
			t.Errorf("a secret's %s event holds its objects: %s %s", ev.Stage, ev.RequestObject, ev.ResponseObject)
		}
	}
	if b, _ := os.ReadFile(a.path); strings.Contains(string(b), "hunter2") || strings.Contains(string(b), "aHVudGVyMg") {
		t.Error("the secret's data is in the log")
	}
	if len(secrets) != 2 || secrets[1].ObjectRef.Resource != "secrets" || secrets[1].ResponseStatus.Code != 201 {
		t.Errorf("the secret's events: %+v, want its metadata", secrets)
	}

	versions, stages := ofRequest(evs, version.header.Get("Audit-ID"))
	if diff := cmp.Diff([]audit.Stage{audit.StageResponseComplete}, stages); diff != "" || versions[0].ObjectRef != nil || versions[0].Level != audit.LevelMetadata {
		t.Errorf("/version: stages (-want +got)\n%s\nevent %+v", diff, versions)
	}
	if hz, _ := ofRequest(evs, healthz.Header.Get("Audit-ID")); len(hz) != 0 {
		t.Errorf("/healthz logged at level None: %+v", hz)
	}
}

// TestAuditBoundsHostileRequests: a body of nearly the 3 MiB limit, and
// headers as long as net/http takes, make events of bounded size.
func TestAuditBoundsHostileRequests(t *testing.T) {
	a := newAuditedServer(t, testAuditPolicy, Config{})
	big := `{"metadata":{"name":"big"},"data":{"k":"` + strings.Repeat("x", 3<<20-100) + `"}}`
	header := http.Header{
		"Content-Type": {mediaJSON}, "User-Agent": {strings.Repeat("u", 64<<10)},
		"Audit-ID": {strings.Repeat("i", 1000)}, "X-Forwarded-For": {strings.Repeat("10.0.0.1, ", 1000)},
	}
	r := exchange(t, a.ts, "POST", "/api/v1/namespaces/default/configmaps?x="+strings.Repeat("q", 200<<10), header, big)
	if r.code != http.StatusUnprocessableEntity { // a ConfigMap holds 1 MiB
		t.Fatalf("create: %d", r.code)
	}
	if id := r.header.Get("Audit-ID"); id != strings.Repeat("i", maxAuditID) {
		t.Errorf("Audit-ID of %d bytes, want the client's first %d", len(id), maxAuditID)
	}
	b, err := os.ReadFile(a.path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d events, want RequestReceived and ResponseComplete", len(lines))
	}
	for _, line := range lines {
		if len(line) >= audit.DefaultMaxEventBytes {
			t.Errorf("an event of %d bytes", len(line))
		}
	}
	evs := a.events(t)
	last := evs[1]
	if last.RequestObject != nil || last.ResponseObject != nil || last.Annotations[audit.TruncatedAnnotation] != "true" {
		t.Errorf("annotations %v, objects %d+%d bytes: want them truncated", last.Annotations, len(last.RequestObject), len(last.ResponseObject))
	}
	if !strings.HasSuffix(last.UserAgent, truncatedSuffix) || !strings.HasSuffix(last.RequestURI, truncatedSuffix) || len(last.SourceIPs) != maxForwardedIPs+1 {
		t.Errorf("user agent %d bytes, URI %d bytes, %d source IPs: want them bounded", len(last.UserAgent), len(last.RequestURI), len(last.SourceIPs))
	}
}

// TestAuditWatchStages: a watch, detached from its handler, is logged when
// it starts, when its response starts and when its stream ends.
func TestAuditWatchStages(t *testing.T) {
	a := newAuditedServer(t, testAuditPolicy, Config{})
	w := openWatch(t, a.ts.Client(), a.ts.URL+"/api/v1/namespaces/default/configmaps?watch=true")
	id := w.resp.Header.Get("Audit-ID")
	if id == "" {
		t.Fatal("a watch without an Audit-ID")
	}
	call(t, a.ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"c"}}`)
	w.next(1, false)
	if a.s.streams.Watches() != 1 {
		t.Fatal("the watch is not detached")
	}
	bad := exchange(t, a.ts, "GET", "/api/v1/namespaces/default/configmaps?watch=true&labelSelector=a%3D%3D%3Db", nil, "")
	a.close() // ends the watch; its last event is written when the log closes
	all := a.events(t)
	failed, stages := ofRequest(all, bad.header.Get("Audit-ID"))
	if want := []audit.Stage{audit.StageRequestReceived, audit.StageResponseStarted, audit.StageResponseComplete}; bad.code != 400 || !cmp.Equal(want, stages) {
		t.Fatalf("a watch refused: %d, stages %v", bad.code, stages)
	}
	if st := failed[2].ResponseStatus; st.Code != 400 || st.Reason != api.StatusReasonBadRequest || st.Message == "" {
		t.Errorf("a watch refused: status %+v, want its Status", st)
	}
	evs, stages := ofRequest(all, id)
	want := []audit.Stage{audit.StageRequestReceived, audit.StageResponseStarted, audit.StageResponseComplete}
	if diff := cmp.Diff(want, stages); diff != "" {
		t.Fatalf("stages (-want +got)\n%s", diff)
	}
	for _, ev := range evs[1:] {
		if ev.Verb != "watch" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 200 || ev.ResponseObject != nil {
			t.Errorf("%s: verb %s, status %+v, response %s", ev.Stage, ev.Verb, ev.ResponseStatus, ev.ResponseObject)
		}
	}
}

// TestAuditAuthentication: the authenticated user, the authorization's
// decision, and the one event of a request that fails authentication.
func TestAuditAuthentication(t *testing.T) {
	tokens, err := authn.ParseTokens(strings.NewReader("alice-token,alice,1,devs\n"))
	if err != nil {
		t.Fatal(err)
	}
	ra := &recordingAuthorizer{allow: func(a authz.Attributes) bool { return a.Verb == "list" }}
	a := newAuditedServer(t, testAuditPolicy, Config{Authenticator: authn.BearerToken{Tokens: tokens}, Authorizer: ra})
	alice := http.Header{"Authorization": {"Bearer alice-token"}}
	list, _ := roundTrip(t, a.ts.Client(), "GET", a.ts.URL+"/api/v1/namespaces/default/configmaps", alice, "")
	denied, _ := roundTrip(t, a.ts.Client(), "GET", a.ts.URL+"/api/v1/namespaces/default/secrets/s", alice, "")
	nobody, _ := roundTrip(t, a.ts.Client(), "GET", a.ts.URL+"/api/v1/namespaces/default/configmaps", nil, "")
	forged, _ := roundTrip(t, a.ts.Client(), "GET", a.ts.URL+"/api/v1/namespaces/default/configmaps", http.Header{"Authorization": {"Bearer forged"}}, "")
	evs := a.events(t)
	last := func(id string) audit.Event {
		got, _ := ofRequest(evs, id)
		if len(got) == 0 {
			t.Fatalf("no event of %s", id)
		}
		return got[len(got)-1]
	}
	ev := last(list.Header.Get("Audit-ID"))
	if want := (audit.UserInfo{Username: "alice", UID: "1", Groups: []string{"devs"}}); !cmp.Equal(want, ev.User) || ev.Annotations[audit.DecisionAnnotation] != "allow" {
		t.Errorf("list: user %+v, annotations %v", ev.User, ev.Annotations)
	}
	ev = last(denied.Header.Get("Audit-ID"))
	if ev.Annotations[audit.DecisionAnnotation] != "forbid" || ev.ResponseStatus.Code != 403 || ev.ResponseStatus.Reason != api.StatusReasonForbidden {
		t.Errorf("denied: annotations %v, status %+v", ev.Annotations, ev.ResponseStatus)
	}
	for _, tt := range []struct {
		resp    *http.Response
		message string
	}{{nobody, "Authentication failed, no credentials provided"}, {forged, "Authentication failed, attempted: bearer"}} {
		got, stages := ofRequest(evs, tt.resp.Header.Get("Audit-ID"))
		if tt.resp.StatusCode != 401 || len(got) != 1 {
			t.Fatalf("%d, stages %v: want 401 and one event", tt.resp.StatusCode, stages)
		}
		want := &api.Status{Code: 401, Message: tt.message}
		if diff := cmp.Diff(want, got[0].ResponseStatus); diff != "" || got[0].Stage != audit.StageResponseStarted || got[0].User.Username != "" {
			t.Errorf("stage %s, user %+v, status (-want +got)\n%s", got[0].Stage, got[0].User, diff)
		}
	}
}

// TestAuditImpersonation: a user authorized who is not the one who
// authenticated is the event's impersonated user.
func TestAuditImpersonation(t *testing.T) {
	admin := &authn.User{Name: "admin", Groups: []string{"system:masters"}}
	bob := &authn.User{Name: "bob", Groups: []string{"devs"}}
	n := &note{audit: &auditRecord{user: admin}}
	r := httptest.NewRequest("GET", "/api", nil)
	r = r.WithContext(context.WithValue(t.Context(), noteKey{}, n))
	auditAuthorized(r, authz.Attributes{User: admin}, authz.Allow, "", nil)
	if n.audit.ev.ImpersonatedUser != nil {
		t.Errorf("the authenticated user is impersonated: %+v", n.audit.ev.ImpersonatedUser)
	}
	auditAuthorized(r, authz.Attributes{User: bob}, authz.Allow, "because", nil)
	want := &audit.UserInfo{Username: "bob", Groups: []string{"devs"}}
	if diff := cmp.Diff(want, n.audit.ev.ImpersonatedUser); diff != "" {
		t.Errorf("impersonated user (-want +got)\n%s", diff)
	}
	if got := n.audit.ev.Annotations[audit.ReasonAnnotation]; got != "because" {
		t.Errorf("reason %q", got)
	}
}

func TestAuditOmitManagedFields(t *testing.T) {
	a := newAuditedServer(t, "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitManagedFields: true\nrules: [{level: RequestResponse}]", Config{})
	apply := exchange(t, a.ts, "PATCH", "/api/v1/namespaces/default/configmaps/c?fieldManager=me", http.Header{"Content-Type": {mediaApplyPatchYAML}}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\ndata: {k: v}\n")
	if apply.code != 201 || apply.obj.Metadata()["managedFields"] == nil {
		t.Fatalf("apply: %d %v, want managedFields in the answer", apply.code, apply.obj)
	}
	list := exchange(t, a.ts, "GET", "/api/v1/namespaces/default/configmaps", nil, "")
	evs := a.events(t)
	for _, id := range []string{apply.header.Get("Audit-ID"), list.header.Get("Audit-ID")} {
		got, _ := ofRequest(evs, id)
		ev := got[len(got)-1]
		if ev.ResponseObject == nil || strings.Contains(string(ev.ResponseObject), "managedFields") {
			t.Errorf("%s: responseObject %s, want it without managedFields", ev.Verb, ev.ResponseObject)
		}
	}
	got, _ := ofRequest(evs, apply.header.Get("Audit-ID"))
	if req, err := api.ParseObject(got[len(got)-1].RequestObject); err != nil || req.Name() != "c" {
		t.Errorf("apply's YAML body as JSON: %s (%v)", got[len(got)-1].RequestObject, err)
	}
}

// BenchmarkAudit creates and lists ConfigMaps (as BenchmarkCreate and
// BenchmarkList) with every request logged at a level, to a file.
func BenchmarkAudit(b *testing.B) {
	for _, level := range []audit.Level{audit.LevelMetadata, audit.LevelRequestResponse} {
		policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: " + string(level) + "}]"
		p, _, err := audit.ParsePolicy([]byte(policy))
		if err != nil {
			b.Fatal(err)
		}
		serve := func(b *testing.B) http.Handler {
			l, err := audit.OpenLog(audit.LogConfig{Path: filepath.Join(b.TempDir(), "audit.log")})
			if err != nil {
				b.Fatal(err)
			}
			store := memory.New()
			s, err := New(b.Context(), Config{Storage: store, Logger: slog.New(slog.DiscardHandler), AuditPolicy: p, AuditLog: l})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { s.Close(); l.Close(); store.Close() })
			return s.Handler()
		}
		b.Run(string(level)+"/create", func(b *testing.B) { benchCreate(b, serve(b)) })
		b.Run(string(level)+"/list", func(b *testing.B) { benchList(b, serve(b)) })
	}
}
