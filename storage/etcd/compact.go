package etcd

import (
	"context"
	"fmt"
	"strconv"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/storage"
)

// compactRevKey is the record of the cluster's compactions, at the root of
// the key space rather than under the prefix: compaction is cluster-wide,
// so every store on the cluster, and every kube-apiserver, which uses the
// same key and protocol (k8s.io/apiserver/pkg/storage/etcd3/compact.go),
// takes part in one schedule. Its value is the revision last compacted to,
// in decimal; its version counts the compactions claimed.
const compactRevKey = "compact_rev_key"

var _ storage.CompactionClaimer = (*Store)(nil)

// ClaimCompaction puts rev in compact_rev_key if the key's version is still
// seen (0: the key does not exist), in one transaction that otherwise reads
// the key.
func (s *Store) ClaimCompaction(ctx context.Context, seen, rev int64) (claimed bool, version, recorded int64, err error) {
	if err := s.checkOpen(); err != nil {
		return false, 0, 0, fmt.Errorf("etcd: claim compaction: %w", err)
	}
	resp, err := s.cli.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", seen)).
		Then(clientv3.OpPut(compactRevKey, strconv.FormatInt(rev, 10))).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return false, 0, 0, fmt.Errorf("etcd: claim compaction: %w", s.mapErr(err))
	}
	if resp.Succeeded {
		return true, seen + 1, rev, nil
	}
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	if len(kvs) == 0 { // deleted since seen: the next claim starts afresh
		return false, 0, 0, nil
	}
	// A value that is not a revision (written by something else) records
	// nothing: the version still orders the claims.
	recorded, _ = strconv.ParseInt(string(kvs[0].Value), 10, 64)
	return false, kvs[0].Version, recorded, nil
}
