package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/listwatch/listwatch/api"
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
