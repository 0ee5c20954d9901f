package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/rbac"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage/memory"
)

// BenchmarkAuthorization is a token's get and create of a 1 KiB ConfigMap
// with authorization off (AlwaysAllow) and with RBAC (the user bound by a
// RoleBinding, as listwatch serve wires it), in process: what RBAC adds
// to a request, without the noise of a loaded machine's sockets.
func BenchmarkAuthorization(b *testing.B) {
	for _, mode := range []string{"off", "rbac"} {
		b.Run(mode, func(b *testing.B) {
			h := authorizedBenchServer(b, mode == "rbac")
			serve := func(b *testing.B, token, method, path, body string, code int) {
				r := httptest.NewRequest(method, path, strings.NewReader(body))
				r.Header.Set("Content-Type", mediaJSON)
				r.Header.Set("Authorization", "Bearer "+token)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if w.Code != code {
					b.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
				}
			}
			const rbacPath = "/apis/rbac.authorization.k8s.io/v1/namespaces/default/"
			serve(b, "admin", "POST", rbacPath+"roles", `{"metadata":{"name":"cm"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["*"]}]}`, http.StatusCreated)
			serve(b, "admin", "POST", rbacPath+"rolebindings", `{"metadata":{"name":"cm"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm"},"subjects":[{"kind":"User","name":"bencher"}]}`, http.StatusCreated)
			serve(b, "bench", "POST", benchConfigMaps, benchConfigMap("a"), http.StatusCreated)
			b.Run("get", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					serve(b, "bench", "GET", benchConfigMaps+"/a", "", http.StatusOK)
				}
			})
			i := 0 // names go on across -count's runs on the same server
			b.Run("create", func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					serve(b, "bench", "POST", benchConfigMaps, benchConfigMap(fmt.Sprint("c", i)), http.StatusCreated)
					i++
				}
			})
		})
	}
}

// authorizedBenchServer is a server whose tokens are "admin"
// (system:masters) and "bench" (bencher), authorizing with RBAC or not.
func authorizedBenchServer(b *testing.B, withRBAC bool) http.Handler {
	b.Helper()
	store := memory.New()
	b.Cleanup(func() { store.Close() })
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	tokens, err := authn.ParseTokens(strings.NewReader("admin,admin,1,system:masters\nbench,bencher,2\n"))
	if err != nil {
		b.Fatal(err)
	}
	cfg := Config{Storage: store, Logger: log, Authenticator: authn.AuthenticatedGroup{Authenticator: authn.BearerToken{Tokens: tokens}}, Authorizer: authz.AlwaysAllow{}}
	if withRBAC {
		view, err := rbac.Start(b.Context(), store, resource.Builtins(), log)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(view.Close)
		z := rbac.NewAuthorizer(view)
		cfg.Authorizer = authz.Union{rbac.Privileged{}, authz.Instrumented{Authorizer: z, Record: func(string) {}}}
		cfg.WriteHook = rbac.NewGuard(view, z)
	}
	s, err := New(b.Context(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	return s.Handler()
}
