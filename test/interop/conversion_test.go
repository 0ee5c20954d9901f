package interop

import (
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclientset "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/conversion"
	crconversion "sigs.k8s.io/controller-runtime/pkg/webhook/conversion"
)

const cronGroup = "conv.example.com"

// CronV1 is the stored version, and controller-runtime's hub: an integer size.
type CronV1 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Size int `json:"size"`
	} `json:"spec"`
}

// CronV2 keeps the size as a string, replicas, and converts through the hub.
type CronV2 struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`
	Spec              struct {
		Replicas string `json:"replicas"`
	} `json:"spec"`
}

func (*CronV1) Hub() {}

func (c *CronV2) ConvertTo(hub conversion.Hub) error {
	h := hub.(*CronV1)
	h.ObjectMeta = c.ObjectMeta
	n, err := strconv.Atoi(c.Spec.Replicas)
	h.Spec.Size = n
	return err
}

func (c *CronV2) ConvertFrom(hub conversion.Hub) error {
	h := hub.(*CronV1)
	c.ObjectMeta = h.ObjectMeta
	c.Spec.Replicas = strconv.Itoa(h.Spec.Size)
	return nil
}

func (c *CronV1) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

func (c *CronV2) DeepCopyObject() runtime.Object {
	out := *c
	c.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	return &out
}

// TestControllerRuntimeConversion: a kubebuilder project's conversion
// webhook (controller-runtime's, hub and spoke) converts a custom resource
// that client-go's dynamic client writes, reads, lists and watches in both
// versions through the binary.
func TestControllerRuntimeConversion(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	hook := defineCrons(t, lw.URL)
	ctx := t.Context()

	dc := dynamicClient(t, lw.URL)
	v1 := dc.Resource(schema.GroupVersionResource{Group: cronGroup, Version: "v1", Resource: "crons"}).Namespace("default")
	v2 := dc.Resource(schema.GroupVersionResource{Group: cronGroup, Version: "v2", Resource: "crons"}).Namespace("default")
	w2, err := v2.Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()

	created, err := v2.Create(ctx, &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cronGroup + "/v2", "kind": "Cron", "metadata": map[string]any{"name": "a"}, "spec": map[string]any{"replicas": "3"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(created.Object, "spec", "replicas"); got != "3" || created.GetAPIVersion() != cronGroup+"/v2" {
		t.Errorf("create in v2 answered %v", created.Object)
	}
	got, err := v1.Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if size, _, _ := unstructured.NestedInt64(got.Object, "spec", "size"); size != 3 {
		t.Errorf("get in v1: %v", got.Object)
	}
	if _, err := v1.Update(ctx, withSize(got, 5), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetAPIVersion() != cronGroup+"/v2" {
		t.Fatalf("list in v2: %v", list.Items)
	}
	if r, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "replicas"); r != "5" {
		t.Errorf("list in v2: replicas %q, want 5", r)
	}
	for _, want := range []string{"3", "5"} {
		select {
		case ev := <-w2.ResultChan():
			obj, _ := ev.Object.(*unstructured.Unstructured)
			if r, _, _ := unstructured.NestedString(obj.Object, "spec", "replicas"); ev.Type == watch.Error || r != want {
				t.Errorf("watch in v2: %s %v, want replicas %s", ev.Type, ev.Object, want)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("no watch event in v2")
		}
	}
	if hook.calls.Load() == 0 {
		t.Error("the conversion webhook was never called")
	}
}

// cronHook is the conversion webhook defineCrons serves: it counts its
// calls, and answers 503 while down.
type cronHook struct {
	calls atomic.Int64
	down  atomic.Bool
}

// defineCrons serves controller-runtime's conversion webhook for crons and
// defines crons on the server at url, converted by it.
func defineCrons(t *testing.T, url string) *cronHook {
	t.Helper()
	scheme := runtime.NewScheme()
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: cronGroup, Version: "v1", Kind: "Cron"}, &CronV1{})
	scheme.AddKnownTypeWithName(schema.GroupVersionKind{Group: cronGroup, Version: "v2", Kind: "Cron"}, &CronV2{})
	handler := crconversion.NewWebhookHandler(scheme, crconversion.NewRegistry())
	ch := new(cronHook)
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ch.calls.Add(1)
		if ch.down.Load() {
			http.Error(w, "down for the test", http.StatusServiceUnavailable)
			return
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(hook.Close)
	crds, err := apiextensionsclientset.NewForConfig(&rest.Config{Host: url, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	hookURL := hook.URL + "/convert"
	schemaOf := func(field, typ string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: typ}}}}}}
	}
	if _, err := crds.ApiextensionsV1().CustomResourceDefinitions().Create(t.Context(), &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "crons." + cronGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: cronGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "crons", Kind: "Cron"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaOf("size", "integer")},
				{Name: "v2", Served: true, Schema: schemaOf("replicas", "string")},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: &hookURL, CABundle: hookCA(hook)}}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, url+"/apis/"+cronGroup+"/v2/crons")
	return ch
}

// TestConversionWebhookDownInformer: client-go's informer of the converted
// version deletes nothing while the conversion webhook is down: its watch
// ends with the conversion's error, its next ones are refused (429, which
// client-go retries, as it does kube's cacher's while it cannot list) until
// the webhook is back, and then it holds every object as last written.
func TestConversionWebhookDownInformer(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	hook := defineCrons(t, lw.URL)
	dc := dynamicClient(t, lw.URL)
	ctx := t.Context()
	v1 := dc.Resource(schema.GroupVersionResource{Group: cronGroup, Version: "v1", Resource: "crons"}).Namespace("default")
	cron := func(name string, size int64) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": cronGroup + "/v1", "kind": "Cron", "metadata": map[string]any{"name": name}, "spec": map[string]any{"size": size}}}
	}
	a, err := v1.Create(ctx, cron("a", 1), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dc, 0, "default", nil)
	informer := factory.ForResource(schema.GroupVersionResource{Group: cronGroup, Version: "v2", Resource: "crons"}).Informer()
	changed := make(chan struct{}, 1)
	var deleted atomic.Int64
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { notify(changed) },
		UpdateFunc: func(any, any) { notify(changed) },
		DeleteFunc: func(any) { deleted.Add(1) },
	}); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() { defer close(done); informer.Run(stop) }()
	defer func() { close(stop); <-done }()
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatal("the informer did not sync")
	}
	// A watch of our own, from the informer's revision, ends as the informer's does.
	w2, err := dc.Resource(schema.GroupVersionResource{Group: cronGroup, Version: "v2", Resource: "crons"}).Namespace("default").
		Watch(ctx, metav1.ListOptions{ResourceVersion: informer.LastSyncResourceVersion()})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()

	hook.down.Store(true)
	if _, err := v1.Update(ctx, withSize(a, 5), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := v1.Create(ctx, cron("b", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case ev := <-w2.ResultChan():
		if st, ok := ev.Object.(*metav1.Status); ev.Type != watch.Error || !ok || st.Code != http.StatusInternalServerError || !strings.Contains(st.Message, "conversion webhook for") {
			t.Fatalf("watch in v2 while the webhook is down: %s %v, want the conversion's error", ev.Type, ev.Object)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event in v2")
	}
	hook.down.Store(false)

	want := map[string]string{"a": "5", "b": "2"}
	deadline := time.After(90 * time.Second) // client-go's list backoff, then the watch's
	for {
		got := map[string]string{}
		for _, o := range informer.GetStore().List() {
			u := o.(*unstructured.Unstructured)
			got[u.GetName()], _, _ = unstructured.NestedString(u.Object, "spec", "replicas")
		}
		if maps.Equal(got, want) {
			break
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the informer holds %v, want %v", got, want)
		}
	}
	if n := deleted.Load(); n != 0 {
		t.Errorf("the informer saw %d deletions; nothing was deleted", n)
	}
}

// notify signals ch if it has room.
func notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// TestKubectlConversion: kubectl creates a cron in the converted version
// and reads it in both.
func TestKubectlConversion(t *testing.T) {
	eachKubectl(t, func(t *testing.T, k kubectl) {
		defineCrons(t, k.server)
		k.must(t, "create", "-f", writeFile(t, t.TempDir(), "c.yaml", "apiVersion: "+cronGroup+"/v2\nkind: Cron\nmetadata: {name: a, namespace: default}\nspec: {replicas: \"3\"}\n"))
		contains(t, k.must(t, "get", "crons.v1."+cronGroup, "a", "-o", "jsonpath={.apiVersion} {.spec.size}"), `^`+cronGroup+`/v1 3$`)
		contains(t, k.must(t, "get", "crons.v2."+cronGroup, "a", "-o", "jsonpath={.apiVersion} {.spec.replicas}"), `^`+cronGroup+`/v2 3$`)
	})
}

func withSize(obj *unstructured.Unstructured, n int64) *unstructured.Unstructured {
	out := obj.DeepCopy()
	_ = unstructured.SetNestedField(out.Object, n, "spec", "size")
	return out
}
