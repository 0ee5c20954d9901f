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
