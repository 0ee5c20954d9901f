package server

import (
	"crypto/tls"
	"encoding/base64"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/server/registry"
)

// serviceServer is an HTTPS server on 127.0.0.1 whose certificate names
// only the Service hook.hooks.svc, as a webhook's in a cluster; it records
// how it was called.
type serviceServer struct {
	port     string
	caBundle string

	mu   sync.Mutex
	seen []string // "host sni proto path" of each call
}

func startServiceServer(t *testing.T, h http.Handler) *serviceServer {
	ca := authntest.NewCA(t)
	ss := &serviceServer{caBundle: base64.StdEncoding.EncodeToString(ca.PEM)}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ss.mu.Lock()
		ss.seen = append(ss.seen, fmt.Sprintf("%s %s %s %s", r.Host, r.TLS.ServerName, r.Proto, r.URL.Path))
		ss.mu.Unlock()
		h.ServeHTTP(w, r)
	}))
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{ca.ServerFor(t, "hook.hooks.svc")}}
	srv.EnableHTTP2 = true // the client must choose HTTP/1.1 itself, as kube's
	srv.StartTLS()
	t.Cleanup(srv.Close)
	_, ss.port, _ = net.SplitHostPort(srv.Listener.Addr().String())
	return ss
}

func (ss *serviceServer) calls() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return append([]string(nil), ss.seen...)
}

// storeService stores the Service hooks/hook, its port 443 named https
// targeting ss's port, and an EndpointSlice with 127.0.0.1 ready; it waits
// for the watch caches to hold them, as a webhook call reads them there.
func storeService(t *testing.T, s *Server, ts *httptest.Server, ss *serviceServer) {
	t.Helper()
	for _, w := range []struct{ path, body string }{
		{"/api/v1/namespaces", `{"metadata":{"name":"hooks"}}`},
		{"/api/v1/namespaces/hooks/services", `{"metadata":{"name":"hook"},"spec":{"ports":[{"name":"https","port":443,"targetPort":` + ss.port + `}]}}`},
		{"/apis/discovery.k8s.io/v1/namespaces/hooks/endpointslices", `{"metadata":{"name":"hook-1","labels":{"kubernetes.io/service-name":"hook"}},"addressType":"IPv4",
			"endpoints":[{"addresses":["127.0.0.1"],"conditions":{"ready":true}}],"ports":[{"name":"https","port":` + ss.port + `,"protocol":"TCP"}]}`},
	} {
		r := do(t, ts, "POST", w.path, "", w.body)
		if r.code != http.StatusCreated {
			t.Fatalf("%s: %d %v", w.path, r.code, r.obj)
		}
		waitCached(t, s, r.obj.ResourceVersion())
	}
}

// markReady sets the ready condition of the EndpointSlice's endpoint.
func markReady(t *testing.T, s *Server, ts *httptest.Server, ready bool) {
	t.Helper()
	r := do(t, ts, "PATCH", "/apis/discovery.k8s.io/v1/namespaces/hooks/endpointslices/hook-1", "",
		fmt.Sprintf(`{"endpoints":[{"addresses":["127.0.0.1"],"conditions":{"ready":%t}}]}`, ready))
	if r.code != http.StatusOK {
		t.Fatalf("endpointslice: %d %v", r.code, r.obj)
	}
	waitCached(t, s, r.obj.ResourceVersion())
}

// waitCached waits for the Services' and EndpointSlices' caches to reach
// revision rv.
func waitCached(t *testing.T, s *Server, rv string) {
	t.Helper()
	rev, err := registry.ParseResourceVersion(rv)
	if err != nil {
		t.Fatal(err)
	}
	for _, gr := range [][2]string{{"", "services"}, {"discovery.k8s.io", "endpointslices"}} {
		res, _ := s.catalog.Get(gr[0], "v1", gr[1])
		c, err := s.readyCache(t.Context(), res)
		if err == nil {
			err = c.WaitFresh(t.Context(), rev)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestWebhookServiceReference: a webhook given by service reference is
// called at the ready endpoint of the stored EndpointSlice, with the
// Service's name as Host and TLS server name, over HTTP/1.1, as kube's
// endpoint resolver and resolving round tripper; a Service with no such
// port, or no ready endpoint, fails the call with kube's messages.
func TestWebhookServiceReference(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	ss := startServiceServer(t, admissionHandler(func(map[string]any) map[string]any {
		return map[string]any{"allowed": false, "status": map[string]any{"code": 403, "message": "via the service"}}
	}))
	storeService(t, s, ts, ss)
	config := func(port int) string {
		return configMapHook(fmt.Sprintf(`{"service":{"namespace":"hooks","name":"hook","path":"/validate","port":%d},"caBundle":%q}`, port, ss.caBundle))
	}
	if r := do(t, ts, "POST", validatingHook, "", config(443)); r.code != http.StatusCreated {
		t.Fatalf("configuration: %d %v", r.code, r.obj)
	}
	code, st, _ := writeConfigMap(t, ts, "POST", `{"metadata":{"name":"c"}}`)
	if want := `admission webhook "a.example.com" denied the request: via the service`; code != http.StatusForbidden || st["message"] != want {
		t.Fatalf("create: %d %v, want 403 %q", code, st["message"], want)
	}
	if got, want := ss.calls(), []string{"hook.hooks.svc:443 hook.hooks.svc HTTP/1.1 /validate"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("calls %q, want %q", got, want)
	}

	const failed = `Internal error occurred: failed calling webhook "a.example.com": failed to call webhook: Post "https://hook.hooks.svc:%d/validate?timeout=10s": `
	markReady(t, s, ts, false)
	code, st, _ = writeConfigMap(t, ts, "POST", `{"metadata":{"name":"c"}}`)
	if want := fmt.Sprintf(failed, 443) + `no endpoints available for service "hook"`; code != http.StatusInternalServerError || st["message"] != want {
		t.Errorf("no ready endpoint: %d %v, want 500 %q", code, st["message"], want)
	}
	if r := do(t, ts, "PUT", validatingHook+"/h", "", config(8443)); r.code != http.StatusOK {
		t.Fatalf("configuration: %d %v", r.code, r.obj)
	}
	code, st, _ = writeConfigMap(t, ts, "POST", `{"metadata":{"name":"c"}}`)
	if want := fmt.Sprintf(failed, 8443) + `no service port 8443 found for service "hook"`; code != http.StatusInternalServerError || st["message"] != want {
		t.Errorf("no such port: %d %v, want 500 %q", code, st["message"], want)
	}
	if n := len(ss.calls()); n != 1 {
		t.Errorf("the webhook was called %d times, want once", n)
	}
}

// TestConversionWebhookServiceReference: a conversion webhook given by
// service reference is reached through the stored EndpointSlice too.
func TestConversionWebhookServiceReference(t *testing.T) {
	s, ts := newCRDServer(t, newMemoryStore(t))
	c := startConverter(t)
	ss := startServiceServer(t, http.HandlerFunc(c.serve))
	storeService(t, s, ts, ss)
	c.clientConfig = fmt.Sprintf(`{"service":{"namespace":"hooks","name":"hook","path":"/convert"},"caBundle":%q}`, ss.caBundle)
	if r := do(t, ts, "POST", crdsPath, "", c.cronCRD()); r.code != http.StatusCreated {
		t.Fatalf("creating the definition: %d %v", r.code, r.obj)
	}
	if r := do(t, ts, "POST", cronsV2, "", `{"metadata":{"name":"a"},"spec":{"replicas":"3"}}`); r.code != http.StatusCreated || at(r.obj, "spec.replicas") != "3" {
		t.Fatalf("create in v2: %d %v", r.code, r.obj)
	}
	if r := do(t, ts, "GET", cronsV1+"/a", "", ""); r.code != http.StatusOK || fmt.Sprint(at(r.obj, "spec.size")) != "3" {
		t.Fatalf("get in v1: %d %v", r.code, r.obj)
	}
	calls := ss.calls()
	if len(calls) == 0 || calls[0] != "hook.hooks.svc:443 hook.hooks.svc HTTP/1.1 /convert" {
		t.Errorf("calls %q", calls)
	}
}

// TestRandomEndpoint chooses as kube's RandomEndpoint: a ready (or
// unconditioned) endpoint of a slice whose port has the Service port's
// name (a port without a name matches none), the Service's first IP
// family first.
func TestRandomEndpoint(t *testing.T) {
	name := func(s string) *string { return &s }
	port := func(p int32) *int32 { return &p }
	no := false
	slice := func(family string, portName *string, addrs ...string) endpointSlice {
		s := endpointSlice{AddressType: family}
		s.Ports = []slicePort{{portName, port(8443)}}
		for _, a := range addrs {
			var ep sliceEndpoint
			ep.Addresses = []string{strings.TrimSuffix(a, "!")}
			if strings.HasSuffix(a, "!") {
				ep.Conditions.Ready = &no
			}
			s.Endpoints = append(s.Endpoints, ep)
		}
		return s
	}
	for _, tt := range []struct {
		name   string
		slices []endpointSlice
		family string
		want   string
	}{
		{"ready only", []endpointSlice{slice("IPv4", name("https"), "10.0.0.1!", "10.0.0.2")}, "IPv4", "10.0.0.2:8443"},
		{"none ready", []endpointSlice{slice("IPv4", name("https"), "10.0.0.1!")}, "IPv4", ""},
		{"port by name", []endpointSlice{slice("IPv4", name("other"), "10.0.0.1"), slice("IPv4", name("https"), "10.0.0.2")}, "IPv4", "10.0.0.2:8443"},
		{"unnamed port", []endpointSlice{slice("IPv4", nil, "10.0.0.1")}, "IPv4", ""},
		{"preferred family", []endpointSlice{slice("IPv4", name("https"), "10.0.0.1"), slice("IPv6", name("https"), "fd00::1")}, "IPv6", "[fd00::1]:8443"},
	} {
		for range 8 { // the order is random: every draw must agree
			if got := randomEndpoint(slices.Clone(tt.slices), "https", tt.family); got != tt.want {
				t.Fatalf("%s: %q, want %q", tt.name, got, tt.want)
			}
		}
	}
}
