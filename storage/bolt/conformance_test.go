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
