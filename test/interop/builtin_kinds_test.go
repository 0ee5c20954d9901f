package interop

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// notServed explains each resource of kube's default discovery that the
// server does not serve (docs/ARCHITECTURE.md lists them too).
var notServed = map[string]string{
	"v1 componentstatuses": "computed from kube's own components' health",
	"v1 pods/log":          "streams from a kubelet; there is none",
	"v1 pods/exec":         "streams to a kubelet",
	"v1 pods/attach":       "streams to a kubelet",
	"v1 pods/portforward":  "streams to a kubelet",
	"v1 pods/proxy":        "proxies to a pod; none runs",
	"v1 nodes/proxy":       "proxies to a kubelet",
	"v1 services/proxy":    "proxies to a Service's endpoints; none run",
}

// TestDiscoveryIsKubes reads the server's discovery with client-go's
// discovery client and compares every group-version with the discovery
// kube publishes for its release (module k8s.io/kubernetes, api/discovery):
// the same group-versions, and in each the same resources and
// subresources with the same names, kinds, scope, verbs, short names and
// categories, but for those notServed explains. storageVersionHash is not
// compared: it hashes kube's storage encoding, which the server does not
// publish.
func TestDiscoveryIsKubes(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: lw.URL})
	if err != nil {
		t.Fatal(err)
	}
	info, err := dc.ServerVersion()
	if err != nil {
		t.Fatal(err)
	}
	kubeDir := KubeModule(t, strings.TrimSuffix(info.GitVersion, "+listwatch"))
	_, lists, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	ours := map[string]*metav1.APIResourceList{}
	for _, l := range lists {
		ours[l.GroupVersion] = l
	}
	files, err := filepath.Glob(filepath.Join(kubeDir, "api/discovery/api*__v*.json"))
	if err != nil {
		t.Fatal(err)
	}
	kubeGVs := 0
	for _, f := range files {
		var kube metav1.APIResourceList
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, &kube); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		gv := kube.GroupVersion
		if strings.Contains(gv, "alpha") || strings.Contains(gv, "beta") {
			if ours[gv] != nil {
				t.Errorf("%s is served; kube serves no beta or alpha by default", gv)
			}
			continue
		}
		kubeGVs++
		our := ours[gv]
		if our == nil {
			t.Errorf("%s: not served", gv)
			continue
		}
		compareResources(t, gv, kube.APIResources, our.APIResources)
	}
	if len(ours) != kubeGVs {
		t.Errorf("%d group-versions served, kube serves %d", len(ours), kubeGVs)
	}
}

func compareResources(t *testing.T, gv string, kube, ours []metav1.APIResource) {
	t.Helper()
	byName := map[string]metav1.APIResource{}
	for _, r := range ours {
		byName[r.Name] = r
	}
	for _, k := range kube {
		o, served := byName[k.Name]
		delete(byName, k.Name)
		if why, ok := notServed[gv+" "+k.Name]; ok {
			if served {
				t.Errorf("%s %s is served, but explained as not: %s", gv, k.Name, why)
			}
			continue
		}
		if !served {
			t.Errorf("%s %s: not served", gv, k.Name)
			continue
		}
		if got, want := describe(gv, o), describe(gv, k); got != want {
			t.Errorf("%s %s:\n got %s\nwant %s", gv, k.Name, got, want)
		}
	}
	for name := range byName {
		t.Errorf("%s %s: served, but kube has no such resource", gv, name)
	}
}

// describe is what the test compares of a resource, as one line, as
// client-go reads it from either form of discovery: client-go's reading of
// aggregated discovery (which kube serves too) names every resource's group
// and version and gives a subresource its resource's singular name, where
// kube's files leave them empty.
func describe(gv string, r metav1.APIResource) string {
	if r.Group == "" && r.Version == "" {
		r.Group, r.Version, _ = strings.Cut(gv, "/")
		if r.Version == "" {
			r.Group, r.Version = "", r.Group
		}
	}
	if strings.Contains(r.Name, "/") {
		r.SingularName = ""
	}
	verbs := slices.Sorted(slices.Values(r.Verbs))
	return strings.Join([]string{r.SingularName, r.Kind, r.Group, r.Version, boolWord(r.Namespaced, "namespaced", "cluster"),
		strings.Join(verbs, ","), strings.Join(r.ShortNames, ","), strings.Join(r.Categories, ",")}, " | ")
}

func boolWord(b bool, yes, no string) string {
	if b {
		return yes
	}
	return no
}

// builtinObjects are objects of the kinds served from kube's data, as a
// user writes them (JSON).
var builtinObjects = map[schema.GroupVersionResource]string{
	{Group: "apps", Version: "v1", Resource: "deployments"}:                  `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"o"},"spec":{"replicas":2,"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]}]}}}}`,
	{Group: "apps", Version: "v1", Resource: "statefulsets"}:                 `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"o"},"spec":{"serviceName":"s","selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}},"volumeClaimTemplates":[{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}]}}`,
	{Group: "apps", Version: "v1", Resource: "daemonsets"}:                   `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"o"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`,
	{Group: "batch", Version: "v1", Resource: "cronjobs"}:                    `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"o"},"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"i"}]}}}}}}`,
	{Version: "v1", Resource: "services"}:                                    `{"apiVersion":"v1","kind":"Service","metadata":{"name":"o"},"spec":{"selector":{"a":"b"},"ports":[{"port":80}]}}`,
	{Version: "v1", Resource: "pods"}:                                        `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"o"},"spec":{"containers":[{"name":"c","image":"i","env":[{"name":"A","value":"1"}],"volumeMounts":[{"name":"v","mountPath":"/v"}]}],"volumes":[{"name":"v","emptyDir":{}}]}}`,
	{Version: "v1", Resource: "persistentvolumeclaims"}:                      `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"o"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`,
	{Group: "networking.k8s.io", Version: "v1", Resource: "networkpolicies"}: `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"o"},"spec":{"podSelector":{},"ingress":[{"from":[{"podSelector":{}}]}]}}`,
}

// TestBuiltinKindsAsKubeEncodesThem writes objects of the new kinds with
// client-go's dynamic client, watches them, and checks that each object the
// server answers is kube's encoding of its Go type: decoded into k8s.io/api's
// type and encoded again by kube's JSON serializer, it is unchanged (the
// schemas' defaults give the zero values of non-omitempty fields). kube's
// Go defaulting (replicas, restartPolicy, ...) is not applied here: the
// comparison is of encodings, not of defaults. The same object read as
// protobuf is, to k8s.io/api's protobuf decoder, that Go value. (client-go's
// typed clients, in protobuf: TestClientGoProtobufKinds.)
func TestBuiltinKindsAsKubeEncodesThem(t *testing.T) {
	lw := StartListwatch(t, listwatchBin(t), "--data-dir", t.TempDir(), "--unsafe-no-fsync")
	dc := dynamicClient(t, lw.URL)
	ctx := t.Context()
	for gvr, body := range builtinObjects {
		t.Run(gvr.Resource, func(t *testing.T) {
			var obj unstructured.Unstructured
			if err := obj.UnmarshalJSON([]byte(body)); err != nil {
				t.Fatal(err)
			}
			res := dc.Resource(gvr).Namespace("default")
			// Of this object alone: the leader's kubernetes Service and
			// endpoints live in default too.
			w, err := res.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=o"})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			created, err := res.Create(ctx, &obj, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			select {
			case ev := <-w.ResultChan():
				if ev.Type != watch.Added || ev.Object.(*unstructured.Unstructured).GetName() != "o" {
					t.Errorf("watch: %s %v", ev.Type, ev.Object)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("no watch event")
			}
			ours, err := created.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			typed, err := scheme.Scheme.New(created.GroupVersionKind())
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(ours, typed); err != nil {
				t.Fatal(err)
			}
			kube, err := json.Marshal(typed)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(jsonValue(t, kube), jsonValue(t, getProtobuf(t, lw.URL, gvr))); diff != "" {
				t.Errorf("the protobuf GET is not kube's object (-kube +protobuf):\n%s", diff)
			}
			want := jsonValue(t, kube)
			if diff := cmp.Diff(want, jsonValue(t, ours)); diff != "" {
				t.Errorf("stored object is not kube's encoding (-kube +ours):\n%s", diff)
			}
			if err := res.Delete(ctx, "o", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// getProtobuf reads default/o of gvr as protobuf and returns the JSON of
// what k8s.io/api's protobuf decoder makes of it.
func getProtobuf(t *testing.T, url string, gvr schema.GroupVersionResource) []byte {
	t.Helper()
	path := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		path = "/api/" + gvr.Version
	}
	path += "/namespaces/default/" + gvr.Resource + "/o"
	code, body, header := fetchHeader(t, http.MethodGet, url+path, http.Header{"Accept": {mediaProtobuf}}, nil)
	if code != http.StatusOK || header.Get("Content-Type") != mediaProtobuf {
		t.Fatalf("GET %s: %d %s", path, code, header.Get("Content-Type"))
	}
	obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
	if err != nil {
		t.Fatalf("k8s.io/api's decoder: %v", err)
	}
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}
