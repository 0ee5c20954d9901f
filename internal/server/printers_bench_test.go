package server

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

const benchPods = "/api/v1/namespaces/default/pods"

// benchPod is a running pod of about 4 KiB stored: two containers with
// environment, resources, probes and mounts, labels and annotations.
func benchPod(name string) string {
	container := func(n string) string {
		return `{"name":"` + n + `","image":"registry.example.com/team/` + n + `:v1.2.3",
			"ports":[{"containerPort":8080,"name":"http"}],
			"env":[{"name":"LOG_LEVEL","value":"info"},{"name":"POD_NAME","valueFrom":{"fieldRef":{"fieldPath":"metadata.name"}}}],
			"resources":{"requests":{"cpu":"100m","memory":"128Mi"},"limits":{"memory":"256Mi"}},
			"readinessProbe":{"httpGet":{"path":"/healthz","port":8080},"periodSeconds":5},
			"volumeMounts":[{"name":"config","mountPath":"/etc/app"}]}`
	}
	return `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"` + name + `","namespace":"default",
		"labels":{"app":"web","pod-template-hash":"5d8f7c9b6","tier":"frontend"},
		"annotations":{"example.com/config":"` + strings.Repeat("x", 1200) + `"}},
		"spec":{"nodeName":"node-1","containers":[` + container("web") + `,` + container("sidecar") + `],
		"volumes":[{"name":"config","configMap":{"name":"web-config"}}]}}`
}

// benchPodStatus is what a kubelet reports of benchPod.
const benchPodStatus = `{"status":{"phase":"Running","podIP":"10.1.2.3","podIPs":[{"ip":"10.1.2.3"}],"hostIP":"192.168.0.10",
	"conditions":[{"type":"Initialized","status":"True"},{"type":"Ready","status":"True"},{"type":"PodScheduled","status":"True"}],
	"containerStatuses":[
	 {"name":"web","image":"registry.example.com/team/web:v1.2.3","imageID":"sha256:0","ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-01-02T03:04:05Z"}}},
	 {"name":"sidecar","image":"registry.example.com/team/sidecar:v1.2.3","imageID":"sha256:1","ready":true,"restartCount":2,"started":true,
	  "state":{"running":{"startedAt":"2026-01-02T03:04:05Z"}},"lastState":{"terminated":{"exitCode":1,"reason":"Error","finishedAt":"2026-01-02T03:04:00Z"}}}]}}`

// BenchmarkListPodsTable lists 10,000 running pods of about 4 KiB from the
// watch cache as a Table: kubectl get pods on a large cluster, where every
// row's cells are computed.
func BenchmarkListPodsTable(b *testing.B) {
	h := benchServer(b)
	const n = 10_000
	for i := range n {
		name := fmt.Sprint("p", i)
		serveBench(b, h, http.MethodPost, benchPods, benchPod(name), http.StatusCreated)
		r := httptest.NewRequest(http.MethodPatch, benchPods+"/"+name+"/status", strings.NewReader(benchPodStatus))
		r.Header.Set("Content-Type", "application/merge-patch+json")
		w := httptest.NewRecorder()
		if h.ServeHTTP(w, r); w.Code != http.StatusOK {
			b.Fatalf("status: %d %s", w.Code, w.Body)
		}
	}
	list := func() {
		r := httptest.NewRequest(http.MethodGet, benchPods+"?resourceVersion=0", nil)
		r.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
		w := httptest.NewRecorder()
		if h.ServeHTTP(w, r); w.Code != http.StatusOK {
			b.Fatalf("list as Table: %d %s", w.Code, w.Body)
		}
	}
	list()
	b.ReportAllocs()
	for b.Loop() {
		list()
	}
}
