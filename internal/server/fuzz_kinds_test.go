package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
)

// A kind FuzzRequestPath writes: its collection, the object f it holds
// before a request that needs one, and where the fuzzer's document goes in
// a body.
type fuzzTarget struct {
	collection string
	seed       string // object f
	shapes     []fuzzShape
}

// A fuzzShape places the fuzzer's document in a body: its own text, or
// the stored object f (the seed if there is none) with the document at a
// path, so that a write of a part reaches the part's own checks.
type fuzzShape struct {
	text func(doc string) string
	at   []string
}

// fuzzAt is the shape of the stored object with the document at path.
func fuzzAt(path ...string) fuzzShape { return fuzzShape{at: path} }

// fuzzText is the shape of a body of its own.
func fuzzText(f func(doc string) string) fuzzShape { return fuzzShape{text: f} }

const (
	fuzzPods        = "/api/v1/namespaces/default/pods"
	fuzzServices    = "/api/v1/namespaces/default/services"
	fuzzDeploys     = "/apis/apps/v1/namespaces/default/deployments"
	fuzzReplicaSets = "/apis/apps/v1/namespaces/default/replicasets"
	fuzzCSRs        = "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	fuzzBundles     = "/apis/certificates.k8s.io/v1/clustertrustbundles"
)

// fuzzSubst is replaced, in the fuzzer's document, by the stored Service
// f's clusterIP, so that a write can claim an address already held.
const fuzzSubst = "@ip"

var (
	fuzzCMTarget = &fuzzTarget{collection: fuzzCMs, seed: `{"metadata":{"name":"f"},"data":{"k":"v"}}`}
	fuzzNSTarget = &fuzzTarget{collection: "/api/v1/namespaces"} // fz, never deleted
	fuzzPod      = &fuzzTarget{
		collection: fuzzPods,
		seed:       `{"metadata":{"name":"f"},"spec":{"containers":[{"name":"c","image":"nginx","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}}]}}`,
		shapes: []fuzzShape{
			fuzzAt("status"),
			fuzzAt("status", "conditions"),
			fuzzAt("spec", "ephemeralContainers"),
			fuzzAt("spec", "containers", "0", "resources"),
			fuzzAt("spec", "containers", "0", "resizePolicy"),
			fuzzAt("spec", "nodeName"),
			fuzzAt("spec", "containers", "0", "env"),
			fuzzText(func(doc string) string {
				return `{"metadata":{"name":"f"},"spec":{"containers":[{"name":"c","image":"nginx"}],"ephemeralContainers":[{"name":"e","image":"busybox","envFrom":[` + doc + `]}]}}`
			}),
			fuzzText(func(doc string) string {
				return `{"metadata":{"name":"f"},"target":{"kind":"Node","name":` + doc + `}}`
			}),
			fuzzText(func(doc string) string { return `{"metadata":{"name":"f"},"target":` + doc + `}` }),
			fuzzText(func(doc string) string { return `[{"op":"add","path":"/spec/containers/0/image","value":` + doc + `}]` }),
			fuzzText(func(doc string) string { return doc }),
		},
	}
	fuzzService = &fuzzTarget{
		collection: fuzzServices,
		seed:       `{"metadata":{"name":"f"},"spec":{"type":"NodePort","ports":[{"port":80}]}}`,
		shapes: []fuzzShape{
			fuzzAt("spec", "clusterIP"),
			fuzzAt("spec", "clusterIPs"),
			fuzzAt("spec", "type"),
			fuzzAt("spec", "ports"),
			fuzzAt("spec", "ipFamilies"),
			fuzzText(func(doc string) string {
				return `{"metadata":{"name":"g"},"spec":{"clusterIP":` + doc + `,"ports":[{"port":80}]}}`
			}),
			fuzzText(func(doc string) string {
				return `{"metadata":{"name":"g"},"spec":{"clusterIPs":` + doc + `,"ports":[{"port":80}]}}`
			}),
			fuzzText(func(doc string) string {
				return `{"metadata":{"name":"g"},"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":` + doc + `}]}}`
			}),
			fuzzText(func(doc string) string { return `{"spec":{"clusterIP":` + doc + `}}` }),
			fuzzText(func(doc string) string { return `[{"op":"replace","path":"/spec/clusterIPs","value":` + doc + `}]` }),
			fuzzText(func(doc string) string { return doc }),
		},
	}
	fuzzDeploy = &fuzzTarget{
		collection: fuzzDeploys,
		seed:       `{"metadata":{"name":"f"},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
		shapes: []fuzzShape{
			fuzzText(func(doc string) string {
				return `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"f"},"spec":{"replicas":` + doc + `}}`
			}),
			fuzzText(func(doc string) string { return `{"spec":{"replicas":` + doc + `}}` }),
			fuzzText(func(doc string) string { return `[{"op":"replace","path":"/spec/replicas","value":` + doc + `}]` }),
			fuzzText(func(doc string) string { return `{"metadata":` + doc + `}` }),
			fuzzAt("spec", "template", "spec", "containers"),
			fuzzText(func(doc string) string { return doc }),
		},
	}
	fuzzReplicaSet = &fuzzTarget{
		collection: fuzzReplicaSets,
		seed:       strings.Replace(fuzzDeploy.seed, `"spec":{`, `"spec":{"replicas":2,`, 1),
		shapes:     fuzzDeploy.shapes,
	}
	fuzzCSR = &fuzzTarget{
		collection: fuzzCSRs,
		shapes: []fuzzShape{
			fuzzText(func(doc string) string { return fuzzCSRBody(base64.StdEncoding.EncodeToString([]byte(doc))) }),
			fuzzText(func(doc string) string {
				return fuzzCSRBody(base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: []byte(doc)})))
			}),
			fuzzAt("status", "conditions"),
			fuzzAt("status", "certificate"),
			fuzzAt("status"),
			fuzzAt("spec", "usages"),
			fuzzText(func(doc string) string {
				return `{"status":{"conditions":[{"type":"Approved","status":"True","reason":` + doc + `}]}}`
			}),
			fuzzText(func(doc string) string { return doc }),
		},
	}
	fuzzBundle = &fuzzTarget{
		collection: fuzzBundles,
		shapes: []fuzzShape{
			fuzzText(func(doc string) string {
				return `{"metadata":{"name":"f"},"spec":{"trustBundle":` + fuzzJSONString(pemOf("CERTIFICATE", doc)) + `}}`
			}),
			fuzzText(func(doc string) string { return `{"metadata":{"name":"f"},"spec":{"trustBundle":` + doc + `}}` }),
			fuzzAt("spec", "signerName"),
			fuzzAt("spec", "trustBundle"),
			fuzzText(func(doc string) string { return doc }),
		},
	}
)

// fuzzKindOps are FuzzRequestPath's requests of kinds with parts:
// subresources, patches of every type and watches. spec is what of the
// stored object's spec the request may change: nil, anything; empty,
// nothing.
var fuzzKindOps = []fuzzOp{
	{"POST", fuzzPods, mediaJSON, fuzzPod, true, nil},
	{"PUT", fuzzPods + "/f/status", mediaJSON, fuzzPod, false, []string{}},
	{"PATCH", fuzzPods + "/f/status", mediaMergePatch, fuzzPod, false, []string{}},
	{"PATCH", fuzzPods + "/f/status", mediaJSONPatch, fuzzPod, false, []string{}},
	{"PUT", fuzzPods + "/f/resize", mediaJSON, fuzzPod, false, fuzzResizable},
	{"PATCH", fuzzPods + "/f/resize", mediaStrategicPatch, fuzzPod, false, fuzzResizable},
	{"PUT", fuzzPods + "/f/ephemeralcontainers", mediaJSON, fuzzPod, false, []string{"ephemeralContainers"}},
	{"PATCH", fuzzPods + "/f/ephemeralcontainers", mediaStrategicPatch, fuzzPod, false, []string{"ephemeralContainers"}},
	{"POST", fuzzPods + "/f/binding", mediaJSON, fuzzPod, false, []string{"nodeName"}},
	{"POST", "/api/v1/namespaces/default/bindings", mediaJSON, fuzzPod, false, []string{"nodeName"}},
	{"PUT", fuzzPods + "/f", mediaJSON, fuzzPod, false, nil},
	{"PATCH", fuzzPods + "/f", mediaMergePatch, fuzzPod, false, nil},
	{"PATCH", fuzzPods + "/f", mediaJSONPatch, fuzzPod, false, nil},
	{"PATCH", fuzzPods + "/f", mediaStrategicPatch, fuzzPod, false, nil},
	{"PATCH", fuzzPods + "/f?fieldManager=fuzz&force=true", mediaApplyPatchYAML, fuzzPod, false, nil},
	{"GET", fuzzPods, "", fuzzPod, false, nil},
	{"GET", "/api/v1/watch/namespaces/default/pods", "", fuzzPod, false, nil},

	{"POST", fuzzServices, mediaJSON, fuzzService, false, nil},
	{"PUT", fuzzServices + "/f", mediaJSON, fuzzService, false, nil},
	{"PATCH", fuzzServices + "/f", mediaMergePatch, fuzzService, false, nil},
	{"PATCH", fuzzServices + "/f", mediaJSONPatch, fuzzService, false, nil},
	{"PATCH", fuzzServices + "/f", mediaStrategicPatch, fuzzService, false, nil},
	{"PATCH", fuzzServices + "/g?fieldManager=fuzz", mediaApplyPatchYAML, fuzzService, false, nil},
	{"PUT", fuzzServices + "/f/status", mediaJSON, fuzzService, false, []string{}},
	{"GET", fuzzServices, "", fuzzService, false, nil},

	{"PUT", fuzzDeploys + "/f/scale", mediaJSON, fuzzDeploy, false, []string{"replicas"}},
	{"PATCH", fuzzDeploys + "/f/scale", mediaMergePatch, fuzzDeploy, false, []string{"replicas"}},
	{"PATCH", fuzzDeploys + "/f/scale", mediaJSONPatch, fuzzDeploy, false, []string{"replicas"}},
	{"PATCH", fuzzDeploys + "/f/scale?fieldManager=fuzz", mediaApplyPatchYAML, fuzzDeploy, false, []string{"replicas"}},
	{"PATCH", fuzzDeploys + "/f", mediaStrategicPatch, fuzzDeploy, false, nil},
	{"PUT", fuzzDeploys + "/f/status", mediaJSON, fuzzDeploy, false, []string{}},

	{"POST", fuzzCSRs, mediaJSON, fuzzCSR, true, nil},
	{"PUT", fuzzCSRs + "/f/approval", mediaJSON, fuzzCSR, false, []string{}},
	{"PUT", fuzzCSRs + "/f/status", mediaJSON, fuzzCSR, false, []string{}},
	{"PATCH", fuzzCSRs + "/f/status", mediaMergePatch, fuzzCSR, false, []string{}},
	{"PATCH", fuzzCSRs + "/f/approval", mediaJSONPatch, fuzzCSR, false, []string{}},
	{"PUT", fuzzCSRs + "/f", mediaJSON, fuzzCSR, false, []string{}},
	{"PATCH", fuzzCSRs + "/f", mediaStrategicPatch, fuzzCSR, false, []string{}},
	{"GET", fuzzCSRs, "", fuzzCSR, false, nil},

	{"POST", fuzzBundles, mediaJSON, fuzzBundle, true, nil},
	{"PUT", fuzzBundles + "/f", mediaJSON, fuzzBundle, false, nil},
	{"PATCH", fuzzBundles + "/f", mediaMergePatch, fuzzBundle, false, nil},
	{"PATCH", fuzzBundles + "/f?fieldManager=fuzz", mediaApplyPatchYAML, fuzzBundle, false, nil},

	// Dry runs and deletes, which must leave allocations as they were.
	{"POST", fuzzServices + "?dryRun=All", mediaJSON, fuzzService, false, nil},
	{"PUT", fuzzServices + "/f?dryRun=All", mediaJSON, fuzzService, false, nil},
	{"PATCH", fuzzServices + "/f?dryRun=All", mediaMergePatch, fuzzService, false, nil},
	{"DELETE", fuzzServices + "/f?dryRun=All", mediaJSON, fuzzService, false, nil},
	{"DELETE", fuzzServices + "/f", mediaJSON, fuzzService, false, nil},
	{"DELETE", fuzzPods + "/f", mediaJSON, fuzzPod, false, nil},
	{"PUT", fuzzPods + "/f/ephemeralcontainers?dryRun=All", mediaJSON, fuzzPod, false, []string{"ephemeralContainers"}},

	{"PUT", fuzzReplicaSets + "/f/scale", mediaJSON, fuzzReplicaSet, false, []string{"replicas"}},
	{"PATCH", fuzzReplicaSets + "/f/scale", mediaJSONPatch, fuzzReplicaSet, false, []string{"replicas"}},
	{"PATCH", fuzzReplicaSets + "/f/scale?fieldManager=fuzz", mediaApplyPatchYAML, fuzzReplicaSet, false, []string{"replicas"}},

	{"POST", fuzzPods + "/f/eviction", mediaJSON, fuzzEviction, false, nil},
}

// fuzzEviction evicts the pod f with the fuzzer's document as the
// Eviction's deleteOptions, or as the whole Eviction.
var fuzzEviction = &fuzzTarget{
	collection: fuzzPods,
	seed:       fuzzPod.seed,
	shapes: []fuzzShape{
		fuzzText(func(doc string) string {
			return `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"f"},"deleteOptions":` + doc + `}`
		}),
		fuzzText(func(doc string) string { return doc }),
	},
}

// fuzzResizable is what a resize may change: containers' resources and
// resize policies (kube's dropNonResizeUpdates).
var fuzzResizable = []string{"containers.*.resources", "containers.*.resizePolicy", "initContainers.*.resources", "initContainers.*.resizePolicy"}

// fuzzSeedKinds completes the targets' seeds that need key material: a
// CSR's request and a ClusterTrustBundle's certificate.
func fuzzSeedKinds(tb testing.TB) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	req, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "fuzz"}}, key)
	if err != nil {
		tb.Fatal(err)
	}
	fuzzCSR.seed = fuzzCSRBody(base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: req})))
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "fuzz"}, IsCA: true, BasicConstraintsValid: true,
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	cert, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		tb.Fatal(err)
	}
	fuzzBundle.seed = `{"metadata":{"name":"f"},"spec":{"trustBundle":` + fuzzJSONString(pemOf("CERTIFICATE", string(cert))) + `}}`
}

func fuzzCSRBody(request string) string {
	return `{"metadata":{"name":"f"},"spec":{"request":"` + request + `","signerName":"example.com/fuzz","usages":["digital signature"]}}`
}

func pemOf(typ, der string) string {
	return string(pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: []byte(der)}))
}

func fuzzJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// body is the request's body: the shape's text, or the stored object f
// (the seed on a create) with doc spliced in at the shape's path.
func (h *fuzzHarness) body(t *testing.T, o fuzzOp, shape uint8, doc string) string {
	t.Helper()
	shapes := o.target.shapes
	if len(shapes) == 0 {
		shapes = fuzzShapes
	}
	s := shapes[int(shape)%len(shapes)]
	if s.text != nil {
		return s.text(doc)
	}
	base := o.target.seed
	if !o.create {
		code, b := h.do(t, "GET", o.target.collection+"/f", "", "")
		if code != http.StatusOK {
			t.Fatalf("GET %s/f: %d %.2000s", o.target.collection, code, b)
		}
		base = string(b)
	}
	var obj map[string]any
	if err := json.Unmarshal([]byte(base), &obj); err != nil {
		t.Fatal(err)
	}
	const hole = "fuzz-document-here"
	fuzzSet(obj, s.at, hole)
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Replace(string(b), `"`+hole+`"`, doc, 1)
}

// fuzzSet sets v at path in obj, making the maps it lacks; an index into
// a list that is too short sets nothing.
func fuzzSet(obj map[string]any, path []string, v any) {
	var at any = obj
	for i, k := range path {
		last := i == len(path)-1
		switch node := at.(type) {
		case map[string]any:
			if last {
				node[k] = v
				return
			}
			if _, ok := node[k]; !ok {
				node[k] = map[string]any{}
			}
			at = node[k]
		case []any:
			var n int
			if _, err := fmt.Sscan(k, &n); err != nil || n >= len(node) {
				return
			}
			if last {
				node[n] = v
				return
			}
			at = node[n]
		default:
			return
		}
	}
}

// specOf is the stored spec of o's object f, without what o may change;
// nil if o is not checked or f is gone.
func (h *fuzzHarness) specOf(t *testing.T, o fuzzOp) any {
	t.Helper()
	if o.spec == nil {
		return nil
	}
	code, b := h.do(t, "GET", o.target.collection+"/f", "", "")
	if code == http.StatusNotFound {
		return nil
	}
	obj, err := api.ParseObject(b)
	if code != http.StatusOK || err != nil {
		t.Fatalf("GET %s/f: %d %.2000s", o.target.collection, code, b)
	}
	spec := obj["spec"]
	for _, p := range o.spec {
		dropPath(spec, strings.Split(p, "."))
	}
	return spec
}

// dropPath deletes path from v; "*" is every item of a list.
func dropPath(v any, path []string) {
	switch node := v.(type) {
	case map[string]any:
		if len(path) == 1 {
			delete(node, path[0])
		} else {
			dropPath(node[path[0]], path[1:])
		}
	case []any:
		if path[0] == "*" {
			for _, item := range node {
				dropPath(item, path[1:])
			}
		}
	}
}

// keepsSpec checks that o changed no more of f's spec than it may.
func (h *fuzzHarness) keepsSpec(t *testing.T, o fuzzOp, before any) {
	t.Helper()
	if before == nil {
		return
	}
	if after := h.specOf(t, o); after != nil && !reflect.DeepEqual(before, after) {
		t.Fatalf("%s %s changed the spec beyond %v:\nbefore %v\nafter  %v", o.method, o.path, o.spec, before, after)
	}
}

// servicesHoldTheirIPs checks the allocator's invariants: every
// Service's cluster IPs and node ports are its own, and every IPAddress
// is held by the Service it names.
func (h *fuzzHarness) servicesHoldTheirIPs(t *testing.T) {
	t.Helper()
	held := map[string]string{} // IP or node port -> Service
	for _, svc := range h.list(t, "/api/v1/services") {
		name := svc.Namespace() + "/" + svc.Name()
		spec, _ := svc["spec"].(map[string]any)
		ips, _ := spec["clusterIPs"].([]any)
		ports, _ := spec["ports"].([]any)
		var keys []string
		for _, ip := range ips {
			if ip != "None" {
				keys = append(keys, fmt.Sprint(ip))
			}
		}
		for _, p := range ports {
			if port, _ := p.(map[string]any)["nodePort"].(float64); port != 0 {
				keys = append(keys, fmt.Sprint("port ", port))
			}
		}
		for _, k := range keys {
			if other, ok := held[k]; ok {
				t.Fatalf("%s held by Services %s and %s", k, other, name)
			}
			held[k] = name
		}
	}
	addresses := 0
	for _, ip := range h.list(t, "/apis/networking.k8s.io/v1/ipaddresses") {
		addresses++
		ref, _ := ip["spec"].(map[string]any)["parentRef"].(map[string]any)
		if owner := fmt.Sprint(ref["namespace"], "/", ref["name"]); held[ip.Name()] != owner {
			t.Fatalf("IPAddress %s names Service %s, held by %q", ip.Name(), owner, held[ip.Name()])
		}
	}
	ips := 0
	for k := range held {
		if !strings.HasPrefix(k, "port ") {
			ips++
		}
	}
	if addresses != ips {
		t.Fatalf("%d IPAddresses for %d cluster IPs: %v", addresses, ips, held)
	}
}

// list is the items of the list at path.
func (h *fuzzHarness) list(t *testing.T, path string) []api.Object {
	t.Helper()
	code, b := h.do(t, "GET", path, "", "")
	var l struct{ Items []api.Object }
	if err := json.Unmarshal(b, &l); err != nil || code != http.StatusOK {
		t.Fatalf("GET %s: %d %.2000s", path, code, b)
	}
	return l.Items
}
