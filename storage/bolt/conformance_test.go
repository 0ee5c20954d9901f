package bolt

import (
	"fmt"
	"strings"
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

// BenchmarkUpdateNoSync updates 64 objects of about 1.3 KiB in turn (a
// ConfigMap of 1 KiB with its managedFields), one write per commit, as
// `listwatch bench fanout` does, with fsync off; it reports the pages
// each commit writes (bbolt's write count, the meta page included).
func BenchmarkUpdateNoSync(b *testing.B) {
	s, err := Open(b.TempDir(), Options{NoSync: true})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = s.Close() })
	const objects = 64
	value := func(i int) []byte {
		return fmt.Appendf(nil, `{"data":{"pad":"%s","ts":"%019d"},"metadata":{"managedFields":[{"f":"%s"}]}}`,
			strings.Repeat("x", 900), i, strings.Repeat("y", 250))
	}
	keys := make([]string, objects)
	revs := make([]int64, objects)
	for i := range keys {
		keys[i] = fmt.Sprintf("/registry/configmaps/bench/o%d", i)
		if revs[i], err = s.Create(b.Context(), keys[i], value(i)); err != nil {
			b.Fatal(err)
		}
	}
	before := s.db.Stats()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		k := i % objects
		if revs[k], err = s.Update(b.Context(), keys[k], revs[k], value(i)); err != nil {
			b.Fatal(err)
		}
		i++
	}
	after := s.db.Stats()
	d := after.Sub(&before)
	b.ReportMetric(float64(d.TxStats.GetWrite())/float64(i), "pages/op")
}
