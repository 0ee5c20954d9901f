package server

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/storage/memory"
)

// BenchmarkCreateCustom creates custom resources of about 1 KiB whose
// definition has 20 CEL rules, against the same definition without them:
// the rules' share of a create, compiled once when the definition is served.
func BenchmarkCreateCustom(b *testing.B) {
	for _, n := range []int{0, 20} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			h := benchCustomServer(b, n)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				serveBench(b, h, http.MethodPost, benchRecords, benchRecord(fmt.Sprint("r", i)), http.StatusCreated)
				i++
			}
		})
	}
}

// BenchmarkUpdateCustom updates one custom resource of about 1 KiB, one
// field changed each time, whose definition has 20 CEL rules, against the
// same definition without them: the rules' share of an update, where each
// runs once with self and oldSelf and the unchanged values ratchet.
func BenchmarkUpdateCustom(b *testing.B) {
	for _, n := range []int{0, 20} {
		b.Run(fmt.Sprintf("rules=%d", n), func(b *testing.B) {
			h := benchCustomServer(b, n)
			serveBench(b, h, http.MethodPost, benchRecords, benchRecord("r"), http.StatusCreated)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				// The same length every time: f1 changes, not the size.
				body := strings.Replace(benchRecord("r"), `"f1":"vx`, fmt.Sprintf(`"f1":"v%09d`, i), 1)
				serveBench(b, h, http.MethodPut, benchRecords+"/r", body, http.StatusOK)
				i++
			}
		})
	}
}

const benchRecords = "/apis/example.com/v1/namespaces/default/records"

// benchRecord is a record of 20 string fields, about 1 KiB.
func benchRecord(name string) string {
	fields := make([]string, 20)
	for i := range fields {
		fields[i] = fmt.Sprintf(`"f%d":"v%s"`, i, strings.Repeat("x", 40))
	}
	return `{"apiVersion":"example.com/v1","kind":"Record","metadata":{"name":"` + name + `"},"spec":{` + strings.Join(fields, ",") + `}}`
}

// benchCustomServer serves the records definition with n rules on its spec.
func benchCustomServer(b *testing.B, n int) http.Handler {
	b.Helper()
	store := memory.New()
	b.Cleanup(func() { store.Close() })
	s, err := New(b.Context(), Config{Storage: store, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(s.Close)
	props, rules := make([]string, 20), make([]string, n)
	for i := range props {
		props[i] = fmt.Sprintf(`"f%d":{"type":"string","maxLength":64}`, i)
	}
	for i := range rules {
		rules[i] = fmt.Sprintf(`{"rule":"self.f%d.startsWith('v') && size(self.f%d) > 1","message":"f%d must start with v"}`, i, i, i)
	}
	def := `{"metadata":{"name":"records.example.com"},"spec":{"group":"example.com","scope":"Namespaced",
	"names":{"plural":"records","kind":"Record"},"versions":[{"name":"v1","served":true,"storage":true,
	"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","required":["f0"],
	"x-kubernetes-validations":[` + strings.Join(rules, ",") + `],"properties":{` + strings.Join(props, ",") + `}}}}}}]}}`
	h := s.Handler()
	serveBench(b, h, http.MethodPost, crdsPath, def, http.StatusCreated)
	waitFor(b, s, func() bool {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, benchRecords, nil))
		return w.Code == http.StatusOK
	})
	if n > 0 { // the rules run: a record they refuse is refused
		serveBench(b, h, http.MethodPost, benchRecords, strings.Replace(benchRecord("bad"), `"f0":"v`, `"f0":"x`, 1), http.StatusUnprocessableEntity)
	}
	return h
}
