package interop

import (
	"testing"

	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/etcd"
	"github.com/listwatch/listwatch/storage/storagetest"
)

// newEtcdStore returns a store on an etcd of its own: compaction is
// cluster-wide, so stores that share a member do not have histories of their own.
func newEtcdStore(t testing.TB) *etcd.Store {
	s := etcd.NewFromClient(RunEtcd(t), "/test")
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t testing.TB) storage.Interface { return newEtcdStore(t) })
}
