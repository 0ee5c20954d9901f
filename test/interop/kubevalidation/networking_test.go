package kubevalidation

import (
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// networkingObjects are valid Ingresses and NetworkPolicies written here
// in the shapes of the Kubernetes documentation's examples (kubernetes/
// website content/en/examples/service/networking: minimal-ingress,
// ingress-resource-backend, ingress-wildcard-host, simple-fanout-example,
// name-virtual-host-ingress, tls-example-ingress, the network-policy-*
// defaults, networkpolicy-multiport-egress), beside testdata's
// networkpolicy.yaml, to cover each kind of backend, host, path type and
// peer.
var networkingObjects = []string{
	`{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"minimal"},"spec":{"ingressClassName":"nginx-example","rules":[{"http":{"paths":[
		{"path":"/testpath","pathType":"Prefix","backend":{"service":{"name":"test","port":{"number":80}}}}]}}]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"resource-backend"},"spec":{
		"defaultBackend":{"resource":{"apiGroup":"k8s.example.com","kind":"StorageBucket","name":"static-assets"}},
		"rules":[{"http":{"paths":[{"path":"/icons","pathType":"ImplementationSpecific","backend":{"resource":{"apiGroup":"k8s.example.com","kind":"StorageBucket","name":"icon-assets"}}}]}}]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"wildcard-host"},"spec":{"rules":[
		{"host":"foo.bar.com","http":{"paths":[{"path":"/bar","pathType":"Prefix","backend":{"service":{"name":"service1","port":{"number":80}}}}]}},
		{"host":"*.foo.com","http":{"paths":[{"path":"/foo","pathType":"Prefix","backend":{"service":{"name":"service2","port":{"number":80}}}}]}}]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"fanout","annotations":{"kubernetes.io/ingress.class":"nginx"}},"spec":{"ingressClassName":"nginx","rules":[
		{"host":"foo.bar.com","http":{"paths":[
			{"path":"/foo","pathType":"Prefix","backend":{"service":{"name":"service1","port":{"number":4200}}}},
			{"path":"/bar/exact","pathType":"Exact","backend":{"service":{"name":"service2","port":{"name":"http"}}}},
			{"pathType":"ImplementationSpecific","backend":{"service":{"name":"1st-service","port":{"number":8080}}}}]}}]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"tls"},"spec":{
		"tls":[{"hosts":["https-example.foo.com","*.example.com"],"secretName":"testsecret-tls"},{"hosts":["other.example.com"]}],
		"defaultBackend":{"service":{"name":"default","port":{"number":80}}}}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"default-deny-all"},"spec":{"podSelector":{},"policyTypes":["Ingress","Egress"]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"allow-all-ingress"},"spec":{"podSelector":{},"ingress":[{}]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"allow-all-egress"},"spec":{"podSelector":{},"egress":[{}],"policyTypes":["Egress"]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"multi-port-egress"},"spec":{"podSelector":{"matchLabels":{"role":"db"}},"policyTypes":["Egress"],
		"egress":[{"to":[{"ipBlock":{"cidr":"10.0.0.0/24"}}],"ports":[{"protocol":"TCP","port":32000,"endPort":32768}]}]}}`,
	`{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"peers"},"spec":{"podSelector":{"matchExpressions":[{"key":"tier","operator":"In","values":["web"]}]},
		"ingress":[{"from":[{"namespaceSelector":{"matchLabels":{"team":"a"}},"podSelector":{"matchLabels":{"app":"x"}}},{"ipBlock":{"cidr":"2001:db8::/32","except":["2001:db8:1::/48"]}}],
			"ports":[{"port":"http"},{"protocol":"UDP","port":53},{"protocol":"SCTP"}]}]}}`,
}

// ingressMutations each break one rule of an Ingress.
var ingressMutations = map[string]func(obj map[string]any){
	"no rules and no default backend": func(o map[string]any) {
		delete(spec(o), "defaultBackend")
		spec(o)["rules"] = []any{}
	},
	"hosts": setSpec("rules", []any{
		map[string]any{"host": "10.0.0.1"},
		map[string]any{"host": "010.0.0.1"},
		map[string]any{"host": "Foo_Bar.com"},
		map[string]any{"host": "*.*.foo.com", "http": map[string]any{}},
		map[string]any{"host": "foo.*.com", "http": map[string]any{"paths": []any{}}},
	}),
	"paths": setSpec("rules", []any{map[string]any{"http": map[string]any{"paths": []any{
		map[string]any{"path": "relative", "pathType": "Prefix", "backend": serviceBackend("s", 80)},
		map[string]any{"path": "/a//b/./c/../%2fd/.", "pathType": "Exact", "backend": serviceBackend("s", 80)},
		map[string]any{"path": "/x/..", "pathType": "Prefix", "backend": serviceBackend("s", 80)},
		map[string]any{"path": "relative", "pathType": "ImplementationSpecific", "backend": serviceBackend("s", 80)},
		map[string]any{"path": "/", "pathType": "Regex", "backend": serviceBackend("s", 80)},
		map[string]any{"path": "/", "backend": serviceBackend("s", 80)},
	}}}}),
	"backends": setSpec("rules", []any{map[string]any{"http": map[string]any{"paths": []any{
		map[string]any{"path": "/a", "pathType": "Prefix", "backend": map[string]any{}},
		map[string]any{"path": "/b", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"port": map[string]any{"name": "http", "number": 80}}}},
		map[string]any{"path": "/c", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": "Bad.Name", "port": map[string]any{}}}},
		map[string]any{"path": "/d", "pathType": "Prefix", "backend": map[string]any{"service": map[string]any{"name": "s", "port": map[string]any{"name": "Bad--Port"}}}},
		map[string]any{"path": "/e", "pathType": "Prefix", "backend": serviceBackend("s", 70000)},
		map[string]any{"path": "/f", "pathType": "Prefix", "backend": map[string]any{
			"service": map[string]any{"name": "s", "port": map[string]any{"number": 80}}, "resource": map[string]any{"kind": "K", "name": "n"},
		}},
		map[string]any{"path": "/g", "pathType": "Prefix", "backend": map[string]any{"resource": map[string]any{"apiGroup": "Bad_Group", "kind": "a/b", "name": ".."}}},
		map[string]any{"path": "/h", "pathType": "Prefix", "backend": map[string]any{"resource": map[string]any{}}},
	}}}}),
	"default backend without port": setSpec("defaultBackend", map[string]any{"service": map[string]any{"name": "s"}}),
	"tls":                          setSpec("tls", []any{map[string]any{"hosts": []any{"Bad_Host", "*.ok.com", "a.*.com"}, "secretName": "Bad_Secret"}}),
	"ingressClassName": func(o map[string]any) {
		spec(o)["ingressClassName"] = "Bad_Class"
		at(o, "metadata", "annotations")["kubernetes.io/ingress.class"] = "other"
	},
}

func serviceBackend(name string, port int) map[string]any {
	return map[string]any{"service": map[string]any{"name": name, "port": map[string]any{"number": port}}}
}

// networkPolicyMutations each break one rule of a NetworkPolicy.
var networkPolicyMutations = map[string]func(obj map[string]any){
	"podSelector": setSpec("podSelector", map[string]any{"matchLabels": map[string]any{"bad key!": "v"}, "matchExpressions": []any{map[string]any{"key": "a", "operator": "In"}}}),
	"ports": setSpec("ingress", []any{map[string]any{"ports": []any{
		map[string]any{"protocol": "ICMP", "port": 0},
		map[string]any{"port": 100, "endPort": 99},
		map[string]any{"port": 100, "endPort": 70000},
		map[string]any{"port": "http", "endPort": 90},
		map[string]any{"port": "Bad--Name"},
		map[string]any{"endPort": 90},
	}}}),
	"peers": setSpec("egress", []any{map[string]any{"to": []any{
		map[string]any{},
		map[string]any{"podSelector": map[string]any{}, "ipBlock": map[string]any{"cidr": "10.0.0.0/8"}},
		map[string]any{"namespaceSelector": map[string]any{"matchExpressions": []any{map[string]any{"key": "k", "operator": "Exists", "values": []any{"v"}}}}},
	}}}),
	"ipBlocks": setSpec("ingress", []any{map[string]any{"from": []any{
		map[string]any{"ipBlock": map[string]any{}},
		map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0"}},
		map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.1/8", "except": []any{"10.1.0.0/16", "11.0.0.0/16", "10.0.0.0/8", "10.0.0.0/4", "bad", "010.2.0.0/16", "10.3.0.0/016"}}},
		map[string]any{"ipBlock": map[string]any{"cidr": "::ffff:10.0.0.0/104"}},
		map[string]any{"ipBlock": map[string]any{"cidr": "010.0.0.0/8", "except": []any{"10.1.0.0/16"}}},
	}}}),
	"policyTypes unknown":  setSpec("policyTypes", []any{"Ingress", "Sideways"}),
	"policyTypes too many": setSpec("policyTypes", []any{"Ingress", "Egress", "Ingress"}),
}

// ingressUpdates are changes to an Ingress.
var ingressUpdates = map[string]update{
	"class changed away from the annotation": {
		set: func(o map[string]any) {
			spec(o)["ingressClassName"] = "nginx"
			at(o, "metadata", "annotations")["kubernetes.io/ingress.class"] = "nginx"
		},
		change: setSpec("ingressClassName", "other"),
	},
	"path made relative": {
		change: setSpec("rules", []any{map[string]any{"http": map[string]any{"paths": []any{
			map[string]any{"path": "relative", "pathType": "Exact", "backend": serviceBackend("s", 80)},
		}}}}),
		refused: true,
	},
}

// networkPolicyUpdates are changes to a NetworkPolicy.
var networkPolicyUpdates = map[string]update{
	"ports added":        {change: setSpec("ingress", []any{map[string]any{"ports": []any{map[string]any{"port": 8080}}}})},
	"bad CIDR added":     {change: setSpec("egress", []any{map[string]any{"to": []any{map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.1/8"}}}}}), refused: true},
	"policyType unknown": {change: setSpec("policyTypes", []any{"Sideways"}), refused: true},
}

// TestNetworking validates networkingObjects, and copies of them each
// broken in one way or updated, both ways.
func TestNetworking(t *testing.T) {
	for _, doc := range networkingObjects {
		var obj map[string]any
		if err := json.Unmarshal([]byte(doc), &obj); err != nil {
			t.Fatal(err)
		}
		at(obj, "metadata")["namespace"] = "default"
		gvk := schema.GroupVersionKind{Group: "networking.k8s.io", Version: "v1", Kind: obj["kind"].(string)}
		name := at(obj, "metadata")["name"].(string)
		t.Run(name, func(t *testing.T) {
			if kube := compare(t, gvk, encode(t, obj)); len(kube) > 0 {
				t.Errorf("kube refuses a valid object: %v", kube)
			}
		})
		mutations, updates := ingressMutations, ingressUpdates
		if gvk.Kind == "NetworkPolicy" {
			mutations, updates = networkPolicyMutations, networkPolicyUpdates
		}
		for uname, u := range updates {
			checkUpdate(t, name+"/update/"+uname, gvk, obj, u)
		}
		for mname, mutate := range mutations {
			broken := deepCopy(obj).(map[string]any)
			mutate(broken)
			t.Run(name+"/"+mname, func(t *testing.T) {
				if kube := compare(t, gvk, encode(t, broken)); len(kube) == 0 {
					t.Error("the mutation breaks no rule of kube's")
				}
			})
			labelAddedToInvalid(t, name+"/"+mname, gvk, broken)
		}
	}
}
