package server

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
)

func protobufRequest(t *testing.T, method, url string, body map[string]any) *http.Response {
	t.Helper()
	var r io.Reader
	if body != nil {
		b, err := protobuf.Encode(body)
		if err != nil {
			t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, method, url, r)
	req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	if body != nil {
		req.Header.Set("Content-Type", protobuf.ContentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func decodeResponse(t *testing.T, resp *http.Response) api.Object {
	t.Helper()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != protobuf.ContentType {
		t.Fatalf("Content-Type %q (%d): %s", ct, resp.StatusCode, b)
	}
	m, err := protobuf.Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestProtobuf speaks protobuf as client-go's typed clients do: bodies,
// responses, lists, DeleteOptions and the watch stream.
func TestProtobuf(t *testing.T) {
	ts, _, _ := newWatchServer(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	w := protobufRequest(t, "GET", ts.URL+cms+"?watch=true&resourceVersion=0", nil)
	if ct := w.Header.Get("Content-Type"); ct != protobuf.WatchContentType {
		t.Fatalf("watch Content-Type %q", ct)
	}
	resp := protobufRequest(t, "POST", ts.URL+cms, map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "p", "labels": map[string]any{"a": "b"}},
		"data":     map[string]any{"k": "v"},
	})
	created := decodeResponse(t, resp)
	if resp.StatusCode != http.StatusCreated || created.Name() != "p" || created.UID() == "" {
		t.Fatalf("create over protobuf: %d %v", resp.StatusCode, created)
	}
	for _, q := range []string{"", "?resourceVersion=0", "?limit=5"} { // the cache's encoded list, and the store's
		list := decodeResponse(t, protobufRequest(t, "GET", ts.URL+cms+q, nil))
		items, _ := list["items"].([]any)
		if list.Kind() != "ConfigMapList" || len(items) != 1 || api.Object(items[0].(map[string]any)).Name() != "p" || list.Metadata()["resourceVersion"] == "" {
			t.Fatalf("list%s over protobuf: %v", q, list)
		}
	}
	frame, err := protobuf.ReadFrame(w.Body, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	typ, env, err := protobuf.DecodeWatchEvent(frame)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := protobuf.Decode(env)
	if err != nil || typ != api.Added || api.Object(obj).Name() != "p" {
		t.Fatalf("watch frame: %s %v %v", typ, obj, err)
	}
	del := protobufRequest(t, "DELETE", ts.URL+cms+"/p", map[string]any{
		"apiVersion": "v1", "kind": "DeleteOptions",
		"preconditions": map[string]any{"uid": "not-the-uid"},
	})
	if del.StatusCode != http.StatusConflict {
		t.Fatalf("delete with a wrong uid precondition over protobuf: %d", del.StatusCode)
	}
	del = protobufRequest(t, "DELETE", ts.URL+cms+"/p", map[string]any{
		"apiVersion": "v1", "kind": "DeleteOptions",
		"preconditions": map[string]any{"uid": created.UID()},
	})
	if del.StatusCode != http.StatusOK {
		t.Fatalf("delete over protobuf: %d", del.StatusCode)
	}
	frame, _ = protobuf.ReadFrame(w.Body, 1<<20)
	if typ, _, _ := protobuf.DecodeWatchEvent(frame); typ != api.Deleted {
		t.Fatalf("after delete the watch got %s", typ)
	}
}

// TestProtobufBodyOfAnotherKind: a protobuf body whose envelope names
// another kind than the endpoint's is refused as the same body in JSON
// is, without being decoded (a CustomResourceDefinition's schemas cost
// their decoding), and a DELETE's options must be DeleteOptions.
func TestProtobufBodyOfAnotherKind(t *testing.T) {
	ts := newTestServer(t)
	crd := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": map[string]any{"name": "x"}}
	for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"} {
		resp := protobufRequest(t, "POST", ts.URL+path, crd)
		got := statusOf(t, resp)
		code, want := call(t, ts, "POST", path, mediaJSON, `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"x"}}`)
		if resp.StatusCode != code || code < 400 || got["message"] != want["message"] {
			t.Errorf("%s: protobuf %d %v, JSON %d %v: want the same refusal", path, resp.StatusCode, got["message"], code, want["message"])
		}
	}
	if code, obj := call(t, ts, "POST", "/api/v1/namespaces/default/configmaps", mediaJSON, `{"metadata":{"name":"kept"}}`); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, obj)
	}
	resp := protobufRequest(t, "DELETE", ts.URL+"/api/v1/namespaces/default/configmaps/kept", crd)
	if got := statusOf(t, resp); resp.StatusCode != http.StatusBadRequest || got["message"] != "the body is a CustomResourceDefinition, not DeleteOptions" {
		t.Errorf("a DELETE with a CustomResourceDefinition for options: %d %v, want 400", resp.StatusCode, got)
	}
	if code, _ := call(t, ts, "GET", "/api/v1/namespaces/default/configmaps/kept", "", ""); code != http.StatusOK {
		t.Errorf("the configmap was deleted: %d", code)
	}
}

// statusOf reads the JSON Status of a refused request.
func statusOf(t *testing.T, resp *http.Response) map[string]any {
	t.Helper()
	defer resp.Body.Close()
	var st map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatalf("%d: not a JSON Status: %v", resp.StatusCode, err)
	}
	return st
}
