package server

import (
	"fmt"
	"testing"
)

// TestGeneration checks metadata.generation as kube-apiserver keeps it:
// 1 on create and +1 on every change to anything but metadata and status
// for CustomResourceDefinitions and custom resources, never set for
// ConfigMaps, Secrets, Namespaces and Events (their strategies do not set
// it; an update keeps what the object had, as kube's BeforeUpdate does).
// Marking an object held by finalizers for deletion bumps a generation it
// has (kube's markAsDeleting and BeforeDelete).
func TestGeneration(t *testing.T) {
	const (
		cms = "/api/v1/namespaces/default/configmaps"
		crd = crdsPath + "/gadgets.example.com"
	)
	type write struct {
		method, path, body string
		want               any // metadata.generation after it; nil for none
	}
	tests := []struct {
		name   string
		writes []write
	}{
		{"configmap", []write{
			{"POST", cms, `{"metadata":{"name":"g"},"data":{"a":"1"}}`, nil},
			{"PATCH", cms + "/g", `{"data":{"a":"2"}}`, nil},
		}},
		{"configmap created with a generation", []write{
			{"POST", cms, `{"metadata":{"name":"h","generation":7}}`, "7"},
			{"PATCH", cms + "/h", `{"metadata":{"generation":9},"data":{"a":"2"}}`, "7"},
		}},
		{"secret", []write{
			{"POST", "/api/v1/namespaces/default/secrets", `{"metadata":{"name":"g"},"data":{"a":"MQ=="}}`, nil},
			{"PATCH", "/api/v1/namespaces/default/secrets/g", `{"data":{"a":"Mg=="}}`, nil},
		}},
		{"namespace", []write{
			{"POST", "/api/v1/namespaces", `{"metadata":{"name":"g"}}`, nil},
			{"PATCH", "/api/v1/namespaces/g", `{"metadata":{"labels":{"a":"b"}}}`, nil},
		}},
		{"event", []write{
			{"POST", "/api/v1/namespaces/default/events", `{"metadata":{"name":"g"},"involvedObject":{"kind":"Pod","name":"p"},"reason":"A"}`, nil},
			{"PATCH", "/api/v1/namespaces/default/events/g", `{"reason":"B"}`, nil},
		}},
		{"customresourcedefinition", []write{
			{"POST", crdsPath, gadgetCRD, "1"},
			{"PATCH", crd, `{"metadata":{"labels":{"a":"b"}}}`, "1"},
			{"PATCH", crd, `{"spec":{"names":{"shortNames":["gd"]}}}`, "2"},
		}},
		{"custom resource", []write{
			{"POST", crdsPath, gadgetCRD, "1"},
			{"POST", gadgets, `{"metadata":{"name":"g"},"spec":{"size":1}}`, "1"},
			{"PATCH", gadgets + "/g", `{"metadata":{"labels":{"a":"b"}}}`, "1"},
			{"PATCH", gadgets + "/g", `{"spec":{"size":2}}`, "2"},
			{"PATCH", gadgets + "/g", `{"status":{"phase":"Up"}}`, "3"}, // no status subresource
		}},
		{"custom resource with a status subresource", []write{
			{"POST", crdsPath, widgetCRD(""), "1"},
			{"POST", widgets, `{"metadata":{"name":"w"},"spec":{"replicas":1}}`, "1"},
			{"PATCH", widgets + "/w", `{"status":{"phase":"Up"}}`, "1"}, // status ignored here
			{"PATCH", widgets + "/w/status", `{"status":{"phase":"Up"}}`, "1"},
			{"PATCH", widgets + "/w", `{"spec":{"replicas":2}}`, "2"},
		}},
		{"deletion held by a finalizer", []write{
			{"POST", crdsPath, gadgetCRD, "1"},
			{"POST", gadgets, `{"metadata":{"name":"g","finalizers":["example.com/hold"]}}`, "1"},
			{"DELETE", gadgets + "/g", "", "2"},
			{"DELETE", gadgets + "/g", "", "2"}, // already being deleted
			{"POST", cms, `{"metadata":{"name":"g","finalizers":["example.com/hold"]}}`, nil},
			{"DELETE", cms + "/g", "", nil},
		}},
		{"deletion held by the garbage collector's finalizers", []write{
			{"POST", crdsPath, gadgetCRD, "1"},
			{"POST", gadgets, `{"metadata":{"name":"g"}}`, "1"},
			{"DELETE", gadgets + "/g", `{"propagationPolicy":"Foreground"}`, "2"},
			{"DELETE", gadgets + "/g", `{"propagationPolicy":"Orphan"}`, "2"}, // finalizers change, deletion had begun
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ts := newCRDServer(t, newMemoryStore(t))
			for i, w := range tt.writes {
				r := do(t, ts, w.method, w.path, "", w.body)
				if r.code/100 != 2 {
					t.Fatalf("write %d: %s %s: %d %v", i, w.method, w.path, r.code, r.obj)
				}
				if got := at(r.obj, "metadata.generation"); fmt.Sprint(got) != fmt.Sprint(w.want) {
					t.Errorf("write %d: %s %s: generation %v, want %v", i, w.method, w.path, got, w.want)
				}
			}
		})
	}
}
