package server

import (
	"context"
	"errors"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/wait"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// followCache calls each with every change of res's objects (ADDED,
// MODIFIED or DELETED), first with those its watch cache holds as
// ADDED, until ctx ends; whenever the watch ends it logs it as what's
// and watches again, from the cache's objects, after retry.
func (s *Server) followCache(ctx context.Context, res *resource.Resource, what string, retry time.Duration, each func(it watchcache.Item)) {
	for {
		err := s.watchCache(ctx, res, each)
		if ctx.Err() != nil {
			return
		}
		s.log.Warn(what+": a watch ended; starting over", "resource", res.GroupResource(), "err", err, "after", retry)
		if wait.Sleep(ctx, retry) != nil {
			return
		}
	}
}

// watchCache calls each with every change of res's objects until the
// watch or ctx ends.
func (s *Server) watchCache(ctx context.Context, res *resource.Resource, each func(it watchcache.Item)) error {
	c := s.caches.get(res)
	if c == nil {
		return errors.New("the watch cache is closed")
	}
	w, err := c.Watch(ctx, watchcache.WatchOptions{InitialEvents: true})
	if err != nil {
		return err
	}
	defer w.Stop()
	var items []watchcache.Item
	for {
		if items, err = w.Next(ctx, items[:0]); err != nil {
			return err
		}
		for _, it := range items {
			switch it.Type {
			case api.Error:
				return &api.StatusError{Status: *it.Status}
			case api.Bookmark:
				continue
			}
			each(it)
		}
	}
}

// cacheFreshTimeout bounds a controller's wait for a cache to reach the
// store's revision.
const cacheFreshTimeout = 5 * time.Second

// waitCacheFresh waits, cacheFreshTimeout at most, for c to reach rev.
func waitCacheFresh(ctx context.Context, c *watchcache.Cache, rev int64) error {
	ctx, cancel := context.WithTimeout(ctx, cacheFreshTimeout)
	defer cancel()
	return c.WaitFresh(ctx, rev)
}
