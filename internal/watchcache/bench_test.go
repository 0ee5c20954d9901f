package watchcache

import (
	"context"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
)

// BenchmarkApply measures what the cache does per written object before
// any watcher sees it: a 1 KiB ConfigMap with labels, through the codec
// the server gives the cache.
func BenchmarkApply(b *testing.B) {
	var cms *resource.Resource
	for _, r := range resource.Builtins() {
		if r.Plural == "configmaps" {
			cms = r
		}
	}
	c := New(Config{Storage: memory.New(), Prefix: prefix, Codec: Codec{
		Decode: func(ctx context.Context, kv storage.KV) (api.Object, error) { return registry.Decode(ctx, cms, kv) },
		Fields: map[string][]string{"metadata.name": {"metadata", "name"}, "metadata.namespace": {"metadata", "namespace"}},
		Encode: func(kv storage.KV) ([]byte, bool) { return registry.JSON(cms, kv) },
	}})
	b.Cleanup(c.Close)
	if err := c.WaitReady(b.Context()); err != nil {
		b.Fatal(err)
	}
	stored, err := api.MarshalObject(api.Object{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{
			"name": "bench", "namespace": "default", "uid": "6f9d2a4e-8c1b-4e7a-9d3f-2b5c8e1a7f40",
			"creationTimestamp": "2026-11-22T06:00:00Z", "labels": map[string]any{"app": "bench", "tier": "cache"},
		},
		"data": map[string]any{"a": strings.Repeat("x", 400), "b": strings.Repeat("y", 400)},
	})
	if err != nil {
		b.Fatal(err)
	}
	rev := int64(1 << 40) // beyond anything the empty store reports
	b.ReportAllocs()
	for b.Loop() {
		rev++
		kv := storage.KV{Key: prefix + "default/bench", Value: stored, ModRevision: rev}
		_ = c.apply(context.Background(), []storage.Event{{Type: storage.EventPut, Revision: rev, KV: kv}})
	}
}
