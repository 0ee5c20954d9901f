package interop

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/listwatch/listwatch/client"
)

// TestClientListsKubernetesTypesInProtobuf lists k8s.io/api's typed
// ConfigMaps through client.Resource: in protobuf by default (the server's
// answers say so), and the same objects as a JSON list, page by page
// across many decoding batches.
func TestClientListsKubernetesTypesInProtobuf(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	target, err := url.Parse(lw.URL)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var listTypes, watchTypes []string // Content-Type of each list and watch answer
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method == http.MethodGet && strings.HasSuffix(resp.Request.URL.Path, "/configmaps") {
			mu.Lock()
			defer mu.Unlock()
			if resp.Request.URL.Query().Get("watch") == "true" {
				watchTypes = append(watchTypes, resp.Header.Get("Content-Type"))
			} else {
				listTypes = append(listTypes, resp.Header.Get("Content-Type"))
			}
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	defer srv.Close()

	gvr := client.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	resource := func(cfg *client.Config) *client.Resource[*corev1.ConfigMap] {
		c, err := client.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(c.Close)
		return client.NewResource[*corev1.ConfigMap](c, gvr, "default")
	}
	cms := resource(&client.Config{Host: srv.URL})
	ctx := context.Background()
	value := strings.Repeat("v", 2000)
	for i := range 150 {
		_, err := cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i), Labels: map[string]string{"i": fmt.Sprint(i)}, Annotations: map[string]string{"a": "b"}},
			Data:       map[string]string{"value": value},
			BinaryData: map[string][]byte{"bin": {0, 1, 2, byte(i)}},
		}, client.WriteOptions{FieldManager: "interop"})
		if err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	listTypes = nil
	mu.Unlock()
	fromProto, rv, err := cms.ListAll(ctx, client.ListOptions{Limit: 100})
	if err != nil || len(fromProto) != 150 || rv == "" {
		t.Fatalf("protobuf ListAll: %d items at %q, %v", len(fromProto), rv, err)
	}
	mu.Lock()
	protoTypes := listTypes
	listTypes = nil
	mu.Unlock()
	if len(protoTypes) != 2 || protoTypes[0] != "application/vnd.kubernetes.protobuf" {
		t.Errorf("list answers %q, want 2 in protobuf", protoTypes)
	}
	jsonCMs := resource(&client.Config{Host: srv.URL, DisableProtobuf: true})
	fromJSON, _, err := jsonCMs.ListAll(ctx, client.ListOptions{Limit: 100, ResourceVersion: rv, ResourceVersionMatch: "Exact"})
	if err != nil {
		t.Fatal(err)
	}
	if len(listTypes) == 0 || !strings.HasPrefix(listTypes[0], "application/json") {
		t.Errorf("list answers with DisableProtobuf %q, want JSON", listTypes)
	}
	if diff := cmp.Diff(fromJSON, fromProto); diff != "" {
		t.Errorf("(-JSON +protobuf):\n%s", diff)
	}
	if fromProto[7].Data["value"] != value || fromProto[7].BinaryData["bin"][3] != 7 || fromProto[7].CreationTimestamp.IsZero() || len(fromProto[7].ManagedFields) != 1 {
		t.Errorf("item 7 from protobuf: %+v", fromProto[7])
	}

	// A streaming list: every object, then the bookmark that ends them.
	protoEvents, jsonEvents := initialEvents(t, cms), initialEvents(t, jsonCMs)
	mu.Lock()
	gotWatchTypes := watchTypes
	mu.Unlock()
	if len(gotWatchTypes) != 2 || !strings.HasPrefix(gotWatchTypes[0], "application/vnd.kubernetes.protobuf;stream=watch") || !strings.HasPrefix(gotWatchTypes[1], "application/json") {
		t.Errorf("watch answers %q, want protobuf then JSON", gotWatchTypes)
	}
	if len(protoEvents) != 151 || !protoEvents[150].InitialEventsEnd {
		t.Fatalf("protobuf streaming list: %d events, the last %+v", len(protoEvents), protoEvents[len(protoEvents)-1])
	}
	if diff := cmp.Diff(jsonEvents, protoEvents); diff != "" {
		t.Errorf("events (-JSON +protobuf):\n%s", diff)
	}
}

// initialEvents reads a streaming list's events up to the bookmark that
// ends them.
func initialEvents(t *testing.T, r *client.Resource[*corev1.ConfigMap]) []client.Event[*corev1.ConfigMap] {
	t.Helper()
	w, err := r.Watch(context.Background(), client.ListOptions{SendInitialEvents: new(true), ResourceVersionMatch: "NotOlderThan", AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var evs []client.Event[*corev1.ConfigMap]
	for ev := range w.Events() {
		evs = append(evs, ev)
		if ev.InitialEventsEnd {
			return evs
		}
	}
	t.Fatalf("the streaming list ended after %d events: %v", len(evs), w.Err())
	return nil
}
