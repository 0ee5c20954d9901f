package etcdstore_test

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/etcd3"

	"github.com/listwatch/listwatch/storage/etcd"
	"github.com/listwatch/listwatch/test/interop"
)

// claim is one ClaimCompaction's answer, or kube's Compact's.
type claim struct {
	Claimed           bool
	Version, Recorded int64
}

// TestEtcdClaimCompactionWithKube takes turns on one cluster between two
// stores under different prefixes and kube-apiserver's own compactor
// (etcd3.Compact): one record at the root serves all three, a claim
// succeeds only from the version last seen, and each side reads the
// other's revision.
func TestEtcdClaimCompactionWithKube(t *testing.T) {
	cli := interop.RunEtcd(t)
	ctx := testCtx(t)
	a, b := storeOn(t, cli, "/a"), storeOn(t, cli, "/b")
	for i := range 5 {
		mustCreate(t, a, "/k/"+string(rune('a'+i)), "v")
	}
	ours := func(s *etcd.Store, seen, rev int64) func() (claim, error) {
		return func() (claim, error) {
			ok, v, r, err := s.ClaimCompaction(ctx, seen, rev)
			return claim{ok, v, r}, err
		}
	}
	// kube's Compact does not say whether it won; its put makes a revision.
	kube := func(seen, rev int64) func() (claim, error) {
		return func() (claim, error) {
			before, err := cli.Get(ctx, "compact_rev_key")
			if err != nil {
				return claim{}, err
			}
			v, cur, r, err := etcd3.Compact(ctx, cli, seen, rev)
			return claim{cur > before.Header.Revision, v, r}, err
		}
	}
	steps := []struct {
		name string
		do   func() (claim, error)
		want claim
	}{
		{"a claims the first round", ours(a, 0, 3), claim{true, 1, 3}},
		{"b has not seen it", ours(b, 0, 4), claim{false, 1, 3}},
		{"kube has not seen it either", kube(0, 4), claim{false, 1, 3}},
		{"kube claims the next round and compacts", kube(1, 5), claim{true, 2, 5}},
		{"b's version is stale", ours(b, 1, 6), claim{false, 2, 5}},
		{"b claims the round after kube's", ours(b, 2, 6), claim{true, 3, 6}},
		{"kube learns b's revision", kube(2, 7), claim{false, 3, 6}},
	}
	for _, st := range steps {
		got, err := st.do()
		if err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", st.name, diff)
		}
	}
	if _, err := cli.Get(ctx, "/a/k/a", clientv3.WithRev(4)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Errorf("read at 4 after kube compacted to 5: %v, want ErrCompacted", err)
	}
	raw, err := cli.Get(ctx, "compact_rev_key")
	if err != nil || len(raw.Kvs) != 1 || string(raw.Kvs[0].Value) != "6" || raw.Kvs[0].Version != 3 {
		t.Fatalf("compact_rev_key at the root: %v, %v; want value 6, version 3", raw, err)
	}
}
