package server

import (
	"context"
	"encoding/json"
	"sync"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/admission/quota"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// quotaFollowRetry is how long a follower whose watch ended waits to
// watch again.
const quotaFollowRetry = time.Second

// quotaFollow follows, for the leader's looks, the watch caches of the
// resources the quotas count: it marks a namespace whose objects of one
// were created, deleted or (for pods, services and claims, whose usage
// their fields give) updated, and a resource whose watch (re)started,
// before which a change may have gone unseen.
type quotaFollow struct {
	s  *Server
	wg sync.WaitGroup
	// running are the followers by resource; only the looks' goroutine
	// touches it.
	running map[[2]string]*quotaFollower

	mu    sync.Mutex
	dirty map[string]bool    // guarded by mu: namespaces marked since the last take
	stale map[[2]string]bool // guarded by mu: resources marked since the last take
}

type quotaFollower struct {
	c      *watchcache.Cache
	cancel context.CancelFunc
}

func newQuotaFollow(s *Server) *quotaFollow {
	return &quotaFollow{s: s, running: map[[2]string]*quotaFollower{}, dirty: map[string]bool{}, stale: map[[2]string]bool{}}
}

// follow runs a follower for each of resources (and for no other) until
// ctx ends or stop.
func (f *quotaFollow) follow(ctx context.Context, resources map[[2]string]bool) {
	for gr, r := range f.running {
		if !resources[gr] || f.s.caches.get(f.s.servedResource(gr[0], gr[1])) != r.c {
			r.cancel()
			delete(f.running, gr)
		}
	}
	for gr := range resources {
		if f.running[gr] != nil {
			continue
		}
		c := f.s.caches.get(f.s.servedResource(gr[0], gr[1]))
		if c == nil {
			continue
		}
		ctx, cancel := context.WithCancel(ctx)
		f.running[gr] = &quotaFollower{c: c, cancel: cancel}
		f.wg.Go(func() { f.watch(ctx, gr, c) })
	}
}

// stop ends every follower and waits for them.
func (f *quotaFollow) stop() {
	for gr, r := range f.running {
		r.cancel()
		delete(f.running, gr)
	}
	f.wg.Wait()
}

// watch marks what c's events change until ctx ends, from c's revision
// at each start, watching again after quotaFollowRetry (or longer, while
// it cannot) when a watch ends.
func (f *quotaFollow) watch(ctx context.Context, gr [2]string, c *watchcache.Cache) {
	updates := quota.ReadsObjects(gr[0], gr[1])
	watchcache.Follow(ctx, watchcache.FollowOptions{
		Cache:   func() *watchcache.Cache { return c },
		OnStart: func() { f.markStale(gr) }, // what changed before the watch began
		Each:    func(items []watchcache.Item) { f.markItems(items, updates) },
		Retry:   quotaFollowRetry,
	})
}

func (f *quotaFollow) markStale(gr [2]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stale[gr] = true
}

// markItems marks the namespaces of items that change usage.
func (f *quotaFollow) markItems(items []watchcache.Item, updates bool) {
	var namespaces []string
	for _, it := range items {
		if it.Type != api.Added && it.Type != api.Deleted && (it.Type != api.Modified || !updates) {
			continue
		}
		var meta struct {
			Metadata struct {
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		if json.Unmarshal(it.Object, &meta) == nil {
			namespaces = append(namespaces, meta.Metadata.Namespace)
		}
	}
	f.mark(namespaces...)
}

// mark marks namespaces for the next look.
func (f *quotaFollow) mark(namespaces ...string) {
	if len(namespaces) == 0 {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ns := range namespaces {
		f.dirty[ns] = true
	}
}

// take returns the namespaces marked, and those counting (by counted) a
// resource marked, since the last take.
func (f *quotaFollow) take(counted map[string][][2]string) map[string]bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	due := f.dirty
	for ns, resources := range counted {
		for _, gr := range resources {
			if f.stale[gr] {
				due[ns] = true
			}
		}
	}
	f.dirty, f.stale = map[string]bool{}, map[[2]string]bool{}
	return due
}
