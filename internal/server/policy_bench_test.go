package server

import (
	"testing"

	"github.com/listwatch/listwatch/internal/server/policy"
	"github.com/listwatch/listwatch/storage/memory"
)

// BenchmarkEnsurePolicyRestart is the default policy's share of a restart:
// every default object read and found complete, nothing written.
func BenchmarkEnsurePolicyRestart(b *testing.B) {
	store := memory.New()
	defer store.Close()
	s, err := New(b.Context(), Config{Storage: store})
	if err != nil {
		b.Fatal(err)
	}
	s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := policy.Ensure(b.Context(), s.registry, s.catalog, s.log); err != nil {
			b.Fatal(err)
		}
	}
}
