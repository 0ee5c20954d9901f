package server

import (
	"context"
	"time"

	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// followCache calls each with every change of res's objects (ADDED,
// MODIFIED or DELETED), first with those its watch cache holds as
// ADDED, until ctx ends; whenever the watch ends it logs it as what's
// and watches again, from the cache's objects, after retry (backing off
// while it cannot start).
func (s *Server) followCache(ctx context.Context, res *resource.Resource, what string, retry time.Duration, each func(it watchcache.Item)) {
	watchcache.Follow(ctx, watchcache.FollowOptions{
		Cache:         func() *watchcache.Cache { return s.caches.get(res) },
		InitialEvents: true,
		Each: func(items []watchcache.Item) {
			for _, it := range items {
				each(it)
			}
		},
		Ended: func(err error, after time.Duration) {
			s.log.Warn(what+": a watch ended; starting over", "resource", res.GroupResource(), "err", err, "after", after)
		},
		Retry: retry,
	})
}
