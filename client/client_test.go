package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/client/api"
)

// call is one request a fake server saw.
type call struct {
	Method, Path, Query, ContentType, Accept, Body string
}

// reply is a fake server's canned answer.
type reply struct {
	code   int
	header map[string]string
	body   string
}

// fakeServer answers each request with answer and records it.
type fakeServer struct {
	*httptest.Server
	mu    sync.Mutex
	calls []call // guarded by mu
}

func newFakeServer(t *testing.T, answer func(n int, c call) reply) (*fakeServer, *Client) {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		c := call{r.Method, r.URL.EscapedPath(), r.URL.RawQuery, r.Header.Get("Content-Type"), r.Header.Get("Accept"), string(body)}
		f.mu.Lock()
		n := len(f.calls)
		f.calls = append(f.calls, c)
		f.mu.Unlock()
		rep := answer(n, c)
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		if w.Header().Get("Content-Type") == "" {
			w.Header().Set("Content-Type", "application/json")
		}
		if rep.code == 0 {
			rep.code = http.StatusOK
		}
		w.WriteHeader(rep.code)
		_, _ = io.WriteString(w, rep.body)
	}))
	t.Cleanup(f.Close)
	c, err := New(ConfigForURL(f.URL))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return f, c
}

func (f *fakeServer) seen() []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]call(nil), f.calls...)
}

var things = GroupVersionResource{Group: "example.com", Version: "v1", Resource: "things"}

const thingJSON = `{"kind":"Thing","metadata":{"name":"a","namespace":"ns","resourceVersion":"5"},"data":"d"}`

func TestTypedRequests(t *testing.T) {
	f, c := newFakeServer(t, func(_ int, c call) reply {
		if c.Method == http.MethodDelete {
			return reply{body: `{"kind":"Status","status":"Success"}`}
		}
		return reply{body: thingJSON}
	})
	ctx := context.Background()
	r := NewResource[*thing](c, things, "ns")
	want := newThing("a", "5", "d")
	check := func(got *thing, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("object (-want +got):\n%s", diff)
		}
	}
	check(r.Get(ctx, "a"))
	check(r.Create(ctx, newThing("a", "", "d"), WriteOptions{FieldManager: "me"}))
	check(r.Update(ctx, newThing("a", "4", "d"), WriteOptions{DryRun: true}))
	check(r.Patch(ctx, "a", ApplyPatchType, []byte("data: d"), PatchOptions{WriteOptions: WriteOptions{FieldManager: "me"}, Force: true}))
	check(r.InNamespace("").Create(ctx, newThing("a", "", "d"), WriteOptions{}))
	if err := r.Delete(ctx, "a", DeleteOptions{Preconditions: Preconditions{ResourceVersion: "5"}, PropagationPolicy: "Foreground"}); err != nil {
		t.Fatal(err)
	}
	const base = "/apis/example.com/v1/namespaces/ns/things"
	wantCalls := []call{
		{Method: "GET", Path: base + "/a", Accept: "application/json"},
		{Method: "POST", Path: base, Query: "fieldManager=me", ContentType: "application/json", Accept: "application/json",
			Body: `{"kind":"Thing","metadata":{"name":"a","namespace":"ns"},"data":"d"}`},
		{Method: "PUT", Path: base + "/a", Query: "dryRun=All", ContentType: "application/json", Accept: "application/json",
			Body: `{"kind":"Thing","metadata":{"name":"a","namespace":"ns","resourceVersion":"4"},"data":"d"}`},
		{Method: "PATCH", Path: base + "/a", Query: "fieldManager=me&force=true", ContentType: "application/apply-patch+yaml", Accept: "application/json", Body: "data: d"},
		{Method: "POST", Path: base, ContentType: "application/json", Accept: "application/json",
			Body: `{"kind":"Thing","metadata":{"name":"a","namespace":"ns"},"data":"d"}`},
		{Method: "DELETE", Path: base + "/a", ContentType: "application/json", Accept: "application/json",
			Body: `{"apiVersion":"v1","kind":"DeleteOptions","preconditions":{"resourceVersion":"5"},"propagationPolicy":"Foreground"}`},
	}
	if diff := cmp.Diff(wantCalls, f.seen()); diff != "" {
		t.Errorf("requests (-want +got):\n%s", diff)
	}
}

func TestCorePaths(t *testing.T) {
	f, c := newFakeServer(t, func(int, call) reply { return reply{body: `{"kind":"Table","rows":[]}`} })
	ctx := context.Background()
	cms := GroupVersionResource{Version: "v1", Resource: "configmaps"}
	if _, err := NewResource[Unstructured](c, cms, "").ListTable(ctx, ListOptions{LabelSelector: "a=b", Limit: 500}); err != nil {
		t.Fatal(err)
	}
	if _, err := NewResource[Unstructured](c, cms, "a b").GetTable(ctx, "x?y"); err != nil {
		t.Fatal(err)
	}
	got := f.seen()
	if got[0].Path != "/api/v1/configmaps" || got[0].Query != "labelSelector=a%3Db&limit=500" || got[0].Accept != MediaTable {
		t.Errorf("list table: %+v", got[0])
	}
	if got[1].Path != "/api/v1/namespaces/a%20b/configmaps/x%3Fy" {
		t.Errorf("escaping: %+v", got[1])
	}
}

func TestRetries(t *testing.T) {
	tests := []struct {
		name      string
		answer    func(n int) reply
		wantCalls int
		wantErr   func(error) bool
	}{
		{"429 with Retry-After, then success", func(n int) reply {
			if n < 2 {
				return reply{code: 429, header: map[string]string{"Retry-After": "0"}, body: "slow down"}
			}
			return reply{body: thingJSON}
		}, 3, nil},
		{"503 with Retry-After at most 10 times", func(int) reply {
			return reply{code: 503, header: map[string]string{"Retry-After": "0"}}
		}, 1 + DefaultMaxRetries, func(err error) bool { return err != nil }},
		{"500 without Retry-After is not retried", func(int) reply { return reply{code: 500} },
			1, func(err error) bool { return err != nil }},
		{"409 with Retry-After is not retried", func(int) reply {
			return reply{code: 409, header: map[string]string{"Retry-After": "0"}, body: `{"kind":"Status","status":"Failure","reason":"Conflict","code":409}`}
		}, 1, IsConflict},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, c := newFakeServer(t, func(n int, _ call) reply { return tt.answer(n) })
			_, err := NewResource[*thing](c, things, "ns").Create(context.Background(), newThing("a", "", "d"), WriteOptions{})
			if tt.wantErr == nil && err != nil || tt.wantErr != nil && !tt.wantErr(err) {
				t.Errorf("err = %v", err)
			}
			calls := f.seen()
			if len(calls) != tt.wantCalls {
				t.Fatalf("%d calls, want %d", len(calls), tt.wantCalls)
			}
			for _, c := range calls {
				if c.Body != calls[0].Body || c.Body == "" {
					t.Errorf("a retry sent body %q", c.Body)
				}
			}
		})
	}
}

func TestRetryWaitsForRetryAfter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var slept time.Duration
		start := time.Now()
		c := &Client{maxRetries: 3}
		n := 0
		c.http = &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
			n++
			if n == 1 {
				return &http.Response{StatusCode: 429, Header: http.Header{"Retry-After": {"4"}}, Body: io.NopCloser(strings.NewReader(""))}, nil
			}
			slept = time.Since(start)
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("{}"))}, nil
		})}
		c.base = mustParse(t, "http://fake")
		if _, err := c.do(context.Background(), &request{method: "GET", path: "/x"}); err != nil {
			t.Fatal(err)
		}
		if slept != 4*time.Second {
			t.Errorf("retried after %v, want 4s", slept)
		}
	})
}

func mustParse(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestRateLimiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newRateLimiter(2, 3) // 2 a second, 3 at once
		start := time.Now()
		var at []time.Duration
		for range 6 {
			if err := l.wait(context.Background()); err != nil {
				t.Fatal(err)
			}
			at = append(at, time.Since(start))
		}
		want := []time.Duration{0, 0, 0, 500 * time.Millisecond, time.Second, 1500 * time.Millisecond}
		if diff := cmp.Diff(want, at); diff != "" {
			t.Errorf("times (-want +got):\n%s", diff)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		if err := l.wait(ctx); err == nil {
			t.Error("wait beyond the context's deadline succeeded")
		}
	})
	if newRateLimiter(0, 10).wait(context.Background()) != nil {
		t.Error("a zero QPS limiter waited")
	}
}

func TestRequestTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	c, _ := New(&Config{Host: srv.URL, Timeout: 50 * time.Millisecond})
	_, err := NewResource[*thing](c, things, "ns").Get(context.Background(), "a")
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Errorf("err = %v, want a deadline", err)
	}
}

// TestNamesRefused: a name that would make the server read another path
// (configmaps/.. is the namespace, configmaps/ the collection) is
// refused by every verb that takes one, and nothing is sent.
func TestNamesRefused(t *testing.T) {
	f, c := newFakeServer(t, func(int, call) reply { return reply{body: thingJSON} })
	ctx := context.Background()
	r := NewResource[*thing](c, things, "ns")
	verbs := map[string]func(name string) error{
		"Get":      func(name string) error { _, err := r.Get(ctx, name); return err },
		"GetTable": func(name string) error { _, err := r.GetTable(ctx, name); return err },
		"Update":   func(name string) error { _, err := r.Update(ctx, newThing(name, "4", "d"), WriteOptions{}); return err },
		"Patch": func(name string) error {
			_, err := r.Patch(ctx, name, MergePatchType, []byte(`{}`), PatchOptions{})
			return err
		},
		"Apply": func(name string) error {
			_, err := r.Patch(ctx, name, ApplyPatchType, []byte(`data: d`), PatchOptions{WriteOptions: WriteOptions{FieldManager: "me"}, Force: true})
			return err
		},
		"Delete": func(name string) error { return r.Delete(ctx, name, DeleteOptions{}) },
	}
	names := map[string]string{
		"":     "resource name may not be empty",
		".":    `invalid resource name ".": [may not be '.']`,
		"..":   `invalid resource name "..": [may not be '..']`,
		"a/..": `invalid resource name "a/..": [may not contain '/']`,
		"a%2F": `invalid resource name "a%2F": [may not contain '%']`,
	}
	for verb, call := range verbs {
		for name, want := range names {
			if err := call(name); err == nil || err.Error() != want {
				t.Errorf("%s(%q): %v, want %q", verb, name, err, want)
			}
		}
	}
	if got := f.seen(); len(got) != 0 {
		t.Errorf("refused names sent requests: %+v", got)
	}
	for _, call := range verbs {
		_ = call("a..b") // a valid name: sent (the fake's answer is no Table)
	}
	if got := f.seen(); len(got) != len(verbs) {
		t.Errorf("valid names: %d requests, want %d", len(got), len(verbs))
	}
}

// TestNoRedirectForWrites: a redirect is followed for a read, never for a
// write or a delete, which would act on the redirect's target (a server
// cleaning configmaps/.. answered a 307 to the namespace).
func TestNoRedirectForWrites(t *testing.T) {
	f, c := newFakeServer(t, func(_ int, c call) reply {
		if strings.HasSuffix(c.Path, "/a") {
			return reply{code: http.StatusTemporaryRedirect, header: map[string]string{"Location": "/apis/example.com/v1/namespaces/ns/things/b"}}
		}
		return reply{body: thingJSON}
	})
	ctx := context.Background()
	r := NewResource[*thing](c, things, "ns")
	if _, err := r.Get(ctx, "a"); err != nil {
		t.Errorf("GET through a redirect: %v", err)
	}
	writes := map[string]func() error{
		"PUT":    func() error { _, err := r.Update(ctx, newThing("a", "4", "d"), WriteOptions{}); return err },
		"PATCH":  func() error { _, err := r.Patch(ctx, "a", MergePatchType, []byte(`{}`), PatchOptions{}); return err },
		"DELETE": func() error { return r.Delete(ctx, "a", DeleteOptions{}) },
	}
	for method, write := range writes {
		var se *api.StatusError
		if err := write(); !errors.As(err, &se) || se.Status.Code != http.StatusTemporaryRedirect {
			t.Errorf("%s answered a 307: %v, want the 307 as an error", method, err)
		}
	}
	for _, c := range f.seen() {
		if strings.HasSuffix(c.Path, "/b") && c.Method != http.MethodGet {
			t.Errorf("the client followed a redirect of %s", c.Method)
		}
	}
}

// TestMetadataOnlyResource checks the Accept headers of a
// Resource[*api.PartialObjectMetadata], the JSON halves of those
// client-go's metadata client sends (k8s.io/client-go/metadata), and that
// whole objects from a server without the forms decode to their metadata.
func TestMetadataOnlyResource(t *testing.T) {
	f, c := newFakeServer(t, func(_ int, c call) reply {
		switch {
		case strings.Contains(c.Query, "watch=true"):
			return reply{body: `{"type":"ADDED","object":` + thingJSON + "}\n"}
		case c.Path == "/apis/example.com/v1/namespaces/ns/things":
			return reply{body: `{"kind":"ThingList","metadata":{"resourceVersion":"5"},"items":[` + thingJSON + `]}`}
		}
		return reply{body: thingJSON}
	})
	r := NewResource[*api.PartialObjectMetadata](c, things, "ns")
	ctx := t.Context()
	var got []*api.PartialObjectMetadata
	obj, err := r.Get(ctx, "a")
	got = append(got, obj)
	items, _, _, err2 := r.List(ctx, ListOptions{})
	got = append(got, items...)
	obj, err3 := r.Patch(ctx, "a", MergePatchType, []byte(`{}`), PatchOptions{})
	got = append(got, obj)
	w, err4 := r.Watch(ctx, ListOptions{})
	if err := errors.Join(err, err2, err3, err4); err != nil {
		t.Fatal(err)
	}
	got = append(got, (<-w.Events()).Object)
	w.Stop()
	for _, o := range got {
		if o == nil || o.Name != "a" || o.ResourceVersion != "5" {
			t.Errorf("decoded %+v, want a@5", o)
		}
	}
	const object = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json"
	const list = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
	var accepts []string
	for _, c := range f.seen() {
		accepts = append(accepts, c.Method+" "+c.Accept)
	}
	want := []string{"GET " + object, "GET " + list, "PATCH " + object, "GET " + object}
	if diff := cmp.Diff(want, accepts); diff != "" {
		t.Errorf("Accept headers (-want +got):\n%s", diff)
	}
}
