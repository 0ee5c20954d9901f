package crd

import (
	"context"
	"log/slog"
	"testing"

	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage/memory"
)

// TestSyncRefreshAcrossClose: a CRD write's Refresh may apply a definition
// while the server closes the Sync (go test -race checks they share no
// unguarded state), or after: a conversion webhook applied after Close is
// released at once, not kept where nothing would release it.
func TestSyncRefreshAcrossClose(t *testing.T) {
	ctx := context.Background()
	store := memory.New()
	t.Cleanup(func() { store.Close() })
	catalog := resource.NewCatalog(resource.Builtins()...)
	defs, ok := catalog.Get(Group, Version, Plural)
	if !ok {
		t.Fatal("no customresourcedefinitions resource")
	}
	s, err := Start(ctx, catalog, store, defs, nil, nil, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	define := func(name, group string) {
		t.Helper()
		def := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"` + name + `"},
			"spec":{"group":"` + group + `","scope":"Namespaced","names":{"plural":"crons","singular":"cron","kind":"Cron","listKind":"CronList"},
			"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}},
				{"name":"v2","served":true,"storage":false,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}],
			"conversion":{"strategy":"Webhook","webhook":{"conversionReviewVersions":["v1"],"clientConfig":{"url":"https://127.0.0.1:1/convert"}}}}}`
		if _, err := store.Create(ctx, defs.Key("", name), []byte(def)); err != nil {
			t.Fatal(err)
		}
	}
	define("crons.a.example.com", "a.example.com")
	refreshed := make(chan error)
	go func() {
		_, err := s.Refresh(ctx, "crons.a.example.com")
		refreshed <- err
	}()
	s.Close()
	if err := <-refreshed; err != nil {
		t.Fatal(err)
	}
	define("crons.b.example.com", "b.example.com")
	if _, err := s.Refresh(ctx, "crons.b.example.com"); err != nil {
		t.Fatal(err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.converters) != 0 {
		t.Errorf("%d conversion webhooks kept after Close", len(s.converters))
	}
}
