package audit_test

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server/audit"
	"github.com/listwatch/listwatch/internal/server/audit/audittest"
)

func discardLogger() *slog.Logger { return slog.New(slog.DiscardHandler) }

func event(id string) *audit.Event {
	at := time.Date(2026, 11, 26, 21, 0, 0, 123456789, time.FixedZone("x", 3600))
	return &audit.Event{
		Kind: "Event", APIVersion: "audit.k8s.io/v1", Level: audit.LevelMetadata, AuditID: id, Stage: audit.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/default/pods", Verb: "list", User: audit.UserInfo{Username: "alice", Groups: []string{"devs"}},
		RequestReceivedTimestamp: audit.MicroTime(at), StageTimestamp: audit.MicroTime(at),
	}
}

func TestLogWritesJSONLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit", "audit.log")
	l, err := audit.OpenLog(audit.LogConfig{Path: path, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"a", "b", "c"} {
		if !l.Write(event(id)) {
			t.Fatalf("event %s dropped", id)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := bytes.Cut(b, []byte("\n"))
	const want = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"a","stage":"ResponseComplete",` +
		`"requestURI":"/api/v1/namespaces/default/pods","verb":"list","user":{"username":"alice","groups":["devs"]},` +
		`"requestReceivedTimestamp":"2026-11-26T20:00:00.123456Z","stageTimestamp":"2026-11-26T20:00:00.123456Z"}`
	if string(first) != want {
		t.Errorf("first line:\n got %s\nwant %s", first, want)
	}
	var ids []string
	for _, ev := range audittest.ReadLog(t, path) {
		ids = append(ids, ev.AuditID)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, ids); diff != "" {
		t.Errorf("events (-want +got)\n%s", diff)
	}
	if info, err := os.Stat(path); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("file mode: %v %v, want 0600", info.Mode(), err)
	}
	if l.Send(event("late")) {
		t.Error("an event sent after Close was taken")
	}
}

// TestLogTruncates: an event past MaxEventBytes loses its objects and says
// so; one still past it is dropped and counted.
func TestLogTruncates(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.log")
	const max = 4 << 10
	l, err := audit.OpenLog(audit.LogConfig{Path: path, MaxEventBytes: max, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	big := event("big")
	big.Level = audit.LevelRequestResponse
	big.RequestObject = json.RawMessage(`{"data":"` + strings.Repeat("x", 3<<20) + `"}`)
	big.ResponseObject = json.RawMessage(`{"kind":"ConfigMap"}`)
	small := event("small")
	small.Level = audit.LevelRequestResponse
	small.RequestObject = json.RawMessage(`{"kind":"ConfigMap"}`)
	huge := event("huge")
	huge.UserAgent = strings.Repeat("u", max)
	if !l.Write(big) || !l.Write(small) {
		t.Fatal("an event that fits once truncated was dropped")
	}
	if l.Write(huge) {
		t.Error("an event too large without objects was taken")
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if events, errors := l.Counts(); events != 3 || errors != 1 {
		t.Errorf("counts: %d events, %d errors; want 3, 1", events, errors)
	}
	b, _ := os.ReadFile(path)
	for line := range bytes.Lines(b) {
		if len(line) > max {
			t.Errorf("a line of %d bytes, past %d", len(line), max)
		}
	}
	evs := audittest.ReadLog(t, path)
	if len(evs) != 2 {
		t.Fatalf("got %d events, want 2", len(evs))
	}
	if ev := evs[0]; ev.RequestObject != nil || ev.ResponseObject != nil || ev.Annotations[audit.TruncatedAnnotation] != "true" {
		t.Errorf("the large event: objects %d+%d bytes, annotations %v; want none and %s", len(ev.RequestObject), len(ev.ResponseObject), ev.Annotations, audit.TruncatedAnnotation)
	}
	if ev := evs[1]; string(ev.RequestObject) != `{"kind":"ConfigMap"}` || ev.Annotations != nil {
		t.Errorf("the small event: object %s, annotations %v; want it whole", ev.RequestObject, ev.Annotations)
	}
	if big.Annotations != nil {
		t.Error("truncation changed the caller's event")
	}
}

// TestLogRotatesInMiB: the Log rotates at --audit-log-maxsize megabytes,
// between events.
func TestLogRotatesInMiB(t *testing.T) {
	dir := t.TempDir()
	l, err := audit.OpenLog(audit.LogConfig{Path: filepath.Join(dir, "audit.log"), MaxSizeMiB: 1, Logger: discardLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ev := event("x")
	ev.UserAgent = strings.Repeat("u", 10<<10)
	for range 150 { // 1.5 MiB
		l.Send(ev)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("got files %v (%v), want audit.log and one rotated", entries, err)
	}
	events := 0
	for _, e := range entries {
		name := e.Name()
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		content := string(b)
		if len(content) > 1<<20 {
			t.Errorf("%s has %d bytes, past 1 MiB", name, len(content))
		}
		events += strings.Count(content, "\n")
		if !strings.HasSuffix(content, "}\n") {
			t.Errorf("%s does not end with a whole event", name)
		}
	}
	if events != 150 {
		t.Errorf("%d events in the files, want 150", events)
	}
}
