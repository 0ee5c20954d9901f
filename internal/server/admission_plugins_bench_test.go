package server

import (
	"fmt"
	"net/http"
	"testing"
)

// BenchmarkCreatePod creates pods of one container through the handler:
// kube's defaulting, strategy, validation and the built-in admission
// plugins (account, token volume, priority, tolerations).
func BenchmarkCreatePod(b *testing.B) {
	h := benchServer(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pod := fmt.Sprintf(`{"metadata":{"name":"p%d","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27",`+
			`"ports":[{"containerPort":80}],"env":[{"name":"A","value":"1"}]}]}}`, i)
		serveBench(b, h, http.MethodPost, "/api/v1/namespaces/default/pods", pod, http.StatusCreated)
		i++
	}
}

// BenchmarkCreatePodPodSecurity creates the same pods in a namespace that
// enforces baseline and warns of and audits restricted: PodSecurity reads
// and checks each pod at both levels.
func BenchmarkCreatePodPodSecurity(b *testing.B) {
	h := benchServer(b)
	serveBench(b, h, http.MethodPost, "/api/v1/namespaces", `{"metadata":{"name":"pss","labels":{"pod-security.kubernetes.io/enforce":"baseline",`+
		`"pod-security.kubernetes.io/warn":"restricted","pod-security.kubernetes.io/audit":"restricted"}}}`, http.StatusCreated)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		pod := fmt.Sprintf(`{"metadata":{"name":"p%d","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27",`+
			`"ports":[{"containerPort":80}],"env":[{"name":"A","value":"1"}]}]}}`, i)
		serveBench(b, h, http.MethodPost, "/api/v1/namespaces/pss/pods", pod, http.StatusCreated)
		i++
	}
}
