package bolt

import (
	"testing"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/storagetest"
)

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Interface {
		s, err := Open(t.TempDir(), Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

// BenchmarkBolt runs the shared benchmarks with fsync on, as in production.
func BenchmarkBolt(b *testing.B) {
	storagetest.RunBenchmarks(b, benchStore(Options{}))
}

// BenchmarkBoltNoSync runs them with fsync off: the cost of the store's own
// machinery, and the live watch rate when writes are not bound by the disk.
func BenchmarkBoltNoSync(b *testing.B) {
	storagetest.RunBenchmarks(b, benchStore(Options{NoSync: true}))
}

func benchStore(opts Options) func(testing.TB) storage.Interface {
	return func(b testing.TB) storage.Interface {
		s, err := Open(b.TempDir(), opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = s.Close() })
		return s
	}
}
