package etcdstore_test

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/storagetest"
	"github.com/listwatch/listwatch/test/interop"
)

// BenchmarkEtcd runs the benchmarks every backend shares, each on an etcd of its own.
func BenchmarkEtcd(b *testing.B) {
	storagetest.RunBenchmarks(b, func(b testing.TB) storage.Interface { return newEtcdStore(b) })
}

const (
	overheadValue    = 256  // bytes per value, as in storagetest's benchmarks
	overheadListKeys = 1000 // keys per List
)

// BenchmarkEtcdOverhead measures the backend against the clientv3 calls it
// makes, on one embedded etcd. Each iteration does the same etcd work once
// through the backend and once through clientv3, in alternating order, so
// that the load of the machine weighs on both alike; the metrics are each
// side's time per call and the backend's overhead (validation, key prefixing,
// conversion, error mapping) in percent.
func BenchmarkEtcdOverhead(b *testing.B) {
	cli := interop.RunEtcd(b)
	s := storeOn(b, cli, "/lw")
	value := make([]byte, overheadValue)
	ours, raw := 0, 0 // calls so far: they make keys unique across runs
	b.Run("Create", func(b *testing.B) {
		paired(b, func() error {
			ours++
			_, err := s.Create(b.Context(), fmt.Sprintf("/create/%09d", ours), value)
			return err
		}, func() error {
			raw++
			k := fmt.Sprintf("/lw/create/raw/%09d", raw)
			resp, err := cli.Txn(b.Context()).
				If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
				Then(clientv3.OpPut(k, string(value))).
				Commit()
			if err == nil && !resp.Succeeded {
				err = fmt.Errorf("%s exists", k)
			}
			return err
		})
	})
	for i := range overheadListKeys {
		if _, err := s.Create(b.Context(), fmt.Sprintf("/get/%06d", i), value); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("Get", func(b *testing.B) {
		paired(b, func() error {
			ours++
			_, err := s.Get(b.Context(), fmt.Sprintf("/get/%06d", ours%overheadListKeys))
			return err
		}, func() error {
			raw++
			resp, err := cli.Get(b.Context(), fmt.Sprintf("/lw/get/%06d", raw%overheadListKeys))
			if err == nil && len(resp.Kvs) != 1 {
				err = fmt.Errorf("got %d KVs", len(resp.Kvs))
			}
			return err
		})
	})
	b.Run(fmt.Sprintf("List%d", overheadListKeys), func(b *testing.B) {
		paired(b, func() error {
			resp, err := s.List(b.Context(), "/get/", storage.ListOptions{})
			if err == nil && len(resp.KVs) != overheadListKeys {
				err = fmt.Errorf("got %d KVs", len(resp.KVs))
			}
			return err
		}, func() error {
			resp, err := cli.Get(b.Context(), "/lw/get/", clientv3.WithPrefix())
			if err == nil && len(resp.Kvs) != overheadListKeys {
				err = fmt.Errorf("got %d KVs", len(resp.Kvs))
			}
			return err
		})
	})
}

// paired runs ours and raw once per iteration, alternating which goes first,
// and reports the time per call of each and ours' overhead in percent.
func paired(b *testing.B, ours, raw func() error) {
	var tOurs, tRaw time.Duration
	timed := func(op func() error, total *time.Duration) {
		start := time.Now()
		if err := op(); err != nil {
			b.Fatal(err)
		}
		*total += time.Since(start)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if i%2 == 0 {
			timed(ours, &tOurs)
			timed(raw, &tRaw)
		} else {
			timed(raw, &tRaw)
			timed(ours, &tOurs)
		}
		i++
	}
	b.ReportMetric(float64(tOurs.Nanoseconds())/float64(i), "listwatch-ns/call")
	b.ReportMetric(float64(tRaw.Nanoseconds())/float64(i), "clientv3-ns/call")
	b.ReportMetric(100*(float64(tOurs)/float64(tRaw)-1), "overhead-%")
}
