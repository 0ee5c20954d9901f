package server

import (
	"bufio"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/protobuf"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// The Accept headers client-go's metadata client sends (k8s.io/client-go/metadata).
const (
	metadataAccept     = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	metadataListAccept = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	jsonPartial        = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
	jsonPartialList    = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
)

// fetchAs makes a GET with accept and decodes the answer, JSON or protobuf.
func fetchAs(t *testing.T, url, accept string) (int, string, api.Object) {
	t.Helper()
	resp, b := roundTrip(t, http.DefaultClient, http.MethodGet, url, http.Header{"Accept": {accept}}, "")
	ct := resp.Header.Get("Content-Type")
	var obj api.Object
	var err error
	if ct == protobuf.ContentType {
		obj, err = protobuf.Decode(b)
	} else {
		obj, err = api.ParseObject(b)
	}
	if err != nil {
		t.Fatalf("GET %s (%s): %v: %q", url, accept, err, b)
	}
	return resp.StatusCode, ct, obj
}

// checkPartial fails unless obj is the PartialObjectMetadata of name in
// apiVersion gv: its type and metadata, nothing else.
func checkPartial(t *testing.T, what string, obj api.Object, gv, name string) {
	t.Helper()
	keys := slices.Sorted(maps.Keys(obj))
	if obj.APIVersion() != gv || obj.Kind() != asPartial || obj.Name() != name || obj.UID() == "" ||
		!slices.Equal(keys, []string{"apiVersion", "kind", "metadata"}) {
		t.Errorf("%s: got %v, want the %s PartialObjectMetadata of %q and nothing else", what, obj, gv, name)
	}
}

// TestPartialObjectMetadata asks a built-in resource and a custom resource
// for their metadata as kube-apiserver answers it: each Accept form on get
// and list (from the cache and from the store), in JSON, YAML's sibling
// v1beta1 and protobuf (custom resources too), 406 for the form that does
// not fit, and the full objects for everything else.
func TestPartialObjectMetadata(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	if r := do(t, ts, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", widgetCRD("")); r.code != http.StatusCreated {
		t.Fatalf("creating the CRD: %d %v", r.code, r.obj)
	}
	for _, c := range []struct{ path, body, goType string }{
		{"/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}}`, "v1.ConfigMap"},
		{"/apis/example.com/v1/namespaces/default/widgets", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":1}}`, "unstructured.Unstructured"},
	} {
		if r := do(t, ts, "POST", c.path, "", c.body); r.code != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", c.path, r.code, r.obj)
		}
		for _, tc := range []struct {
			name, query, accept string
			object              bool // the object's path, not the list's
			code                int
			contentType, gv     string
			message             string // of a 406 (kube's words), if any
		}{
			{"get json", "", jsonPartial, true, 200, mediaJSON, metaV1, ""},
			{"get v1beta1", "", "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1", true, 200, mediaJSON, "meta.k8s.io/v1beta1", ""},
			{"get client-go", "", metadataAccept, true, 200, mediaProtobuf, metaV1, ""},
			{"get list form", "", jsonPartialList, true, 406, mediaJSON, "",
				"you requested PartialObjectMetadataList, but the requested object is not a list (*" + c.goType + ")"},
			{"list json cached", "", jsonPartialList, false, 200, mediaJSON, metaV1, ""},
			{"list json store", "?limit=5", jsonPartialList, false, 200, mediaJSON, metaV1, ""},
			{"list client-go", "", metadataListAccept, false, 200, mediaProtobuf, metaV1, ""},
			{"list client-go store", "?limit=5", metadataListAccept, false, 200, mediaProtobuf, metaV1, ""},
			{"list v1beta1 protobuf", "", "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1beta1", false, 200, mediaProtobuf, "meta.k8s.io/v1beta1", ""},
			{"list object form", "", jsonPartial, false, 406, mediaJSON, "",
				"you requested PartialObjectMetadata, but the requested object is a list (*" + c.goType + "List)"},
			{"other group", "", "application/json;as=PartialObjectMetadata;g=example.com;v=v1", true, 406, mediaJSON, "", ""},
		} {
			t.Run(c.path+"/"+tc.name, func(t *testing.T) {
				url := ts.URL + c.path + tc.query
				if tc.object {
					url = ts.URL + c.path + "/a" + tc.query
				}
				code, ct, obj := fetchAs(t, url, tc.accept)
				if code != tc.code || ct != tc.contentType {
					t.Fatalf("%d %s, want %d %s: %v", code, ct, tc.code, tc.contentType, obj)
				}
				switch {
				case code != 200:
					if obj.Kind() != "Status" || obj["reason"] != "NotAcceptable" || tc.message != "" && obj["message"] != tc.message {
						t.Errorf("answer %v, want a NotAcceptable Status saying %q", obj, tc.message)
					}
				case tc.object:
					checkPartial(t, "object", obj, tc.gv, "a")
				default:
					items, _ := obj["items"].([]any)
					if obj.APIVersion() != tc.gv || obj.Kind() != asPartialList || len(items) != 1 || obj.Metadata()["resourceVersion"] == "" {
						t.Fatalf("list %v", obj)
					}
					// Items carry their type in JSON, not in protobuf (as kube's).
					item := api.Object(items[0].(map[string]any))
					if ct == mediaProtobuf {
						item["apiVersion"], item["kind"] = tc.gv, asPartial
					}
					checkPartial(t, "item", item, tc.gv, "a")
				}
			})
		}
		// A write asked for metadata answers it too (client-go's metadata
		// client patches so), and a plain get still has the whole object.
		r := exchange(t, ts, "PATCH", c.path+"/a", http.Header{"Content-Type": {mediaMergePatch}, "Accept": {jsonPartial}}, `{"metadata":{"labels":{"p":"q"}}}`)
		if checkPartial(t, "patch", r.obj, metaV1, "a"); r.code != 200 || at(r.obj, "metadata.labels.p") != "q" {
			t.Errorf("patch: %d %v", r.code, r.obj)
		}
		if r := do(t, ts, "GET", c.path+"/a", "", ""); r.obj.Kind() == asPartial || r.obj["spec"] == nil && r.obj["data"] == nil {
			t.Errorf("plain get: %v", r.obj)
		}
	}
}

// partialStream reads a watch asked for with accept: JSON lines or
// protobuf frames, each event's object decoded.
type partialStream struct {
	t     *testing.T
	pb    bool
	r     *bufio.Reader
	lines *bufio.Scanner
}

func openPartialWatch(t *testing.T, url, accept string) *partialStream {
	t.Helper()
	resp := startWatch(t, http.DefaultClient, url, accept)
	s := &partialStream{t: t, pb: resp.Header.Get("Content-Type") == protobuf.WatchContentType, r: bufio.NewReader(resp.Body)}
	s.lines = bufio.NewScanner(s.r)
	return s
}

func (s *partialStream) next() event {
	s.t.Helper()
	if s.pb {
		frame, err := protobuf.ReadFrame(s.r, 1<<20)
		if err != nil {
			s.t.Fatal(err)
		}
		typ, env, err := protobuf.DecodeWatchEvent(frame)
		if err != nil {
			s.t.Fatal(err)
		}
		obj, err := protobuf.Decode(env)
		if err != nil {
			s.t.Fatal(err)
		}
		return event{typ, obj}
	}
	if !s.lines.Scan() {
		s.t.Fatalf("stream ended: %v", s.lines.Err())
	}
	var raw api.WatchEvent
	if err := json.Unmarshal(s.lines.Bytes(), &raw); err != nil {
		s.t.Fatal(err)
	}
	obj, err := api.ParseObject(raw.Object)
	if err != nil {
		s.t.Fatal(err)
	}
	return event{raw.Type, obj}
}

// TestPartialObjectMetadataWatch watches a built-in resource and a custom
// resource for their metadata, in JSON, protobuf and v1beta1 JSON, beside a
// watch of the objects: the initial events, the end of them (a BOOKMARK,
// itself a PartialObjectMetadata, as kube's watch transforms every object),
// an update and a delete reach each as its form, and the plain watch still
// gets the objects (the forms' shared encodings stay apart).
func TestPartialObjectMetadataWatch(t *testing.T) {
	_, ts := newCRDServer(t, newMemoryStore(t))
	if r := do(t, ts, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "", widgetCRD("")); r.code != http.StatusCreated {
		t.Fatalf("creating the CRD: %d %v", r.code, r.obj)
	}
	const query = "?watch=true&allowWatchBookmarks=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
	for _, c := range []struct{ path, body, kind string }{
		{"/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"a"},"data":{"k":"v"}}`, "ConfigMap"},
		{"/apis/example.com/v1/namespaces/default/widgets", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"a"},"spec":{"replicas":1}}`, "Widget"},
	} {
		if r := do(t, ts, "POST", c.path, "", c.body); r.code != http.StatusCreated {
			t.Fatalf("POST %s: %d %v", c.path, r.code, r.obj)
		}
		type watch struct {
			name, gv string // gv "" for the objects
			s        *partialStream
		}
		watches := []watch{
			{"json", metaV1, openPartialWatch(t, ts.URL+c.path+query, jsonPartial)},
			{"json again", metaV1, openPartialWatch(t, ts.URL+c.path+query, jsonPartial)},
			{"client-go", metaV1, openPartialWatch(t, ts.URL+c.path+query, metadataAccept)},
			{"v1beta1", "meta.k8s.io/v1beta1", openPartialWatch(t, ts.URL+c.path+query, "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1beta1")},
			{"objects", "", openPartialWatch(t, ts.URL+c.path+query, mediaJSON)},
		}
		for _, w := range watches {
			if !w.s.pb && w.name == "client-go" {
				t.Errorf("%s: the metadata watch of %s is not protobuf", c.path, w.name)
			}
		}
		check := func(w watch, wantType string, what string) api.Object {
			t.Helper()
			e := w.s.next()
			if e.Type != wantType {
				t.Fatalf("%s %s: %s event %v, want %s", c.path, w.name, e.Type, e.Object, wantType)
			}
			if w.gv == "" {
				if e.Object.Kind() != c.kind {
					t.Errorf("%s %s: %s object %v", c.path, w.name, what, e.Object)
				}
				return e.Object
			}
			if e.Type == api.Bookmark {
				if e.Object.APIVersion() != w.gv || e.Object.Kind() != asPartial || e.Object.Annotations()[api.InitialEventsEndAnnotation] != "true" {
					t.Errorf("%s %s: bookmark %v", c.path, w.name, e.Object)
				}
				return e.Object
			}
			checkPartial(t, c.path+" "+w.name+" "+what, e.Object, w.gv, "a")
			return e.Object
		}
		for _, w := range watches {
			check(w, api.Added, "initial")
			check(w, api.Bookmark, "end of initial events")
		}
		if r := do(t, ts, "PATCH", c.path+"/a", "", `{"metadata":{"labels":{"p":"q"}}}`); r.code != http.StatusOK {
			t.Fatalf("patch: %d %v", r.code, r.obj)
		}
		if r := do(t, ts, "DELETE", c.path+"/a", "", ""); r.code != http.StatusOK {
			t.Fatalf("delete: %d %v", r.code, r.obj)
		}
		for _, w := range watches {
			if obj := check(w, api.Modified, "update"); at(obj, "metadata.labels.p") != "q" {
				t.Errorf("%s %s: update %v lacks the new label", c.path, w.name, obj)
			}
			check(w, api.Deleted, "delete")
		}
	}
}

// TestPartialEncodedOncePerEvent checks that the metadata watches of an
// event share its encodings (the bytes of one are the bytes of the other,
// made once), in JSON and protobuf, while a plain watch still sends the
// cache's own JSON and a v1beta1 watch its own bytes.
func TestPartialEncodedOncePerEvent(t *testing.T) {
	it := watchcache.Item{Type: api.Added, Rev: 5, Alt: new(watchcache.Encoded),
		Object: []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","uid":"u","resourceVersion":"5"},"data":{"k":"v"}}`)}
	enc := func(gv string, pb bool) *watchEncoder { return &watchEncoder{partial: gv, protobuf: pb} }
	same := func(a, b []byte) bool { return len(a) > 0 && len(a) == len(b) && &a[0] == &b[0] }

	j1, j2 := enc(metaV1, false).object(it), enc(metaV1, false).object(it)
	if !same(j1, j2) {
		t.Errorf("two JSON metadata watches made the event's bytes twice")
	}
	obj, err := api.ParseObject(j1)
	if err != nil {
		t.Fatal(err)
	}
	checkPartial(t, "JSON", obj, metaV1, "a")
	p1, err1 := enc(metaV1, true).protobufObject(it)
	p2, err2 := enc(metaV1, true).protobufObject(it)
	if err1 != nil || err2 != nil || !same(p1, p2) {
		t.Errorf("two protobuf metadata watches made the event's bytes twice (%v, %v)", err1, err2)
	}
	if full, _ := enc("", true).protobufObject(it); same(full, p1) {
		t.Errorf("the object's protobuf and its metadata's share bytes")
	}
	if b := enc("", false).object(it); !same(b, it.Object) {
		t.Errorf("a plain watch does not send the cache's JSON")
	}
	b1 := enc("meta.k8s.io/v1beta1", false).object(it)
	if same(b1, enc("meta.k8s.io/v1beta1", false).object(it)) || same(b1, j1) {
		t.Errorf("v1beta1 bytes are shared")
	}
}
