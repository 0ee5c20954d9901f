package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
)

func TestDiffObjects(t *testing.T) {
	old := map[string]any{
		"data":     map[string]any{"a": "1", "gone": "x"},
		"metadata": map[string]any{"name": "n", "resourceVersion": "1", "managedFields": []any{"m1"}},
		"spec":     map[string]any{"list": []any{map[string]any{"x": 1.0}, "same"}, "short": []any{1.0}},
	}
	new := map[string]any{
		"data":     map[string]any{"a": "2", "added": "y"},
		"metadata": map[string]any{"name": "n", "resourceVersion": "2", "managedFields": []any{"m2"}},
		"spec":     map[string]any{"list": []any{map[string]any{"x": 2.0}, "same"}, "short": []any{1.0, 2.0}},
	}
	want := []change{
		{Path: "data.a", Old: "1", New: "2"},
		{Path: "data.gone", Old: "x"},
		{Path: "data.added", New: "y"},
		{Path: "spec.list[0].x", Old: 1.0, New: 2.0},
		{Path: "spec.short", Old: []any{1.0}, New: []any{1.0, 2.0}},
	}
	got := diffObjects(old, new)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if s := got[1].String(); s != `data.gone: "x" -> <none>` {
		t.Errorf("String() = %s", s)
	}
}

func TestDecodeManifests(t *testing.T) {
	yamlDocs := `---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
# only a comment
---
apiVersion: v1
kind: List
items:
- {apiVersion: v1, kind: ConfigMap, metadata: {name: b, namespace: x}}
- {apiVersion: v1, kind: Secret, metadata: {name: c}}
--- 
{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}
`
	var got []string
	for _, doc := range splitDocuments([]byte(yamlDocs)) {
		objs, err := decodeDocument(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range objs {
			got = append(got, o.Kind()+"/"+o.Namespace()+"/"+o.Name())
		}
	}
	want := []string{"ConfigMap//a", "ConfigMap/x/b", "Secret//c", "Deployment//d"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("objects (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"kind: ConfigMap\nmetadata: {name: a}", "apiVersion: v1\nkind: ConfigMap", "[1, 2]", "a: {"} {
		if _, err := decodeDocument([]byte(bad)); err == nil {
			t.Errorf("decodeDocument(%q) accepted", bad)
		}
	}
}

// scriptedWatches serve one scripted stream per open and record the
// resourceVersion each open asked for.
type scriptedWatches struct {
	streams []string // the body of each watch; "refused" fails the open
	opened  []string
}

func (s *scriptedWatches) open(_ context.Context, rv string) (client.Watch[client.Unstructured], error) {
	s.opened = append(s.opened, rv)
	if len(s.opened) > len(s.streams) {
		return nil, errors.New("no more streams")
	}
	body := s.streams[len(s.opened)-1]
	if body == "refused" {
		return nil, errors.New("connection refused")
	}
	return client.NewStreamWatch[client.Unstructured](io.NopCloser(strings.NewReader(body))), nil
}

func event(typ, name, rv string) string {
	return fmt.Sprintf(`{"type":%q,"object":{"metadata":{"name":%q,"namespace":"ns","resourceVersion":%q}}}`, typ, name, rv)
}

const expiredEvent = `{"type":"ERROR","object":{"kind":"Status","status":"Failure","reason":"Expired","code":410,"message":"too old"}}`

func TestFollowerResumesFromTheLastResourceVersion(t *testing.T) {
	s := &scriptedWatches{streams: []string{
		event("ADDED", "a", "5") + event("MODIFIED", "a", "6"), // then a clean end (server timeout)
		event("DELETED", "a", "7") + `{"type":"ADDED","obj`,    // then a broken stream
		"refused", // the server is restarting
		`{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}` + event("ADDED", "b", "10"),
		expiredEvent,
	}}
	var got []string
	f := &follower[client.Unstructured]{
		open: s.open,
		rvOf: func(ev client.Event[client.Unstructured]) string { return ev.Object.GetResourceVersion() },
		handle: func(ev client.Event[client.Unstructured]) error {
			got = append(got, string(ev.Type)+" "+ev.Object.GetResourceVersion())
			return nil
		},
	}
	err := f.run(context.Background(), "4")
	if !client.IsExpired(err) {
		t.Errorf("run() = %v, want the expiry for a relist", err)
	}
	if diff := cmp.Diff([]string{"4", "6", "7", "7", "10"}, s.opened); diff != "" {
		t.Errorf("opened from (-want +got):\n%s", diff)
	}
	want := []string{"ADDED 5", "MODIFIED 6", "DELETED 7", "BOOKMARK 9", "ADDED 10"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestFollowerStops(t *testing.T) {
	forbidden := &api.StatusError{Status: api.NewStatus(403, api.StatusReasonForbidden, "no")}
	f := &follower[client.Unstructured]{
		open: func(context.Context, string) (client.Watch[client.Unstructured], error) { return nil, forbidden },
	}
	if err := f.run(context.Background(), ""); !client.IsForbidden(err) {
		t.Errorf("a refusal: run() = %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	f.open = func(context.Context, string) (client.Watch[client.Unstructured], error) {
		return nil, errors.New("refused")
	}
	if err := f.run(ctx, ""); err != nil {
		t.Errorf("an ended context: run() = %v", err)
	}
}

func TestCellTextAsKubectl(t *testing.T) {
	for _, c := range []struct {
		in   any
		want string
	}{
		{nil, ""},
		{"", ""},
		{"<none>", "<none>"},
		{"2026-11-27T09:00:00Z", "2026-11-27T09:00:00Z"}, // the server's cell, not an age
		{float64(1234567), "1234567"},
		{1.5, "1.5"},
		{true, "true"},
		{"one\ntwo", "one..."},
		{"red\x1b[31m", "red^[[31m"},
	} {
		if got := cellText(c.in); got != c.want {
			t.Errorf("cellText(%#v) = %q, want %q", c.in, got, c.want)
		}
	}
}
