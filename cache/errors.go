package cache

import (
	"errors"
	"strings"
	"syscall"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/client"
)

// Errors the Reflector reports to its WatchErrorHandler.
var (
	// ErrInitialEventsTimeout: a streaming list's initial-events-end
	// bookmark did not come in time; the Reflector falls back to LIST.
	ErrInitialEventsTimeout = errors.New("streaming list: no initial-events-end bookmark in time")
	// ErrWatchStalled: a watch delivered nothing, not even a bookmark, for
	// longer than its timeout; the Reflector stops it and watches again.
	ErrWatchStalled = errors.New("watch: no event before its deadline")
)

// isResourceVersionTooLarge reports the server refusing a resourceVersion
// it has not reached yet (kube-apiserver: 504 with cause
// ResourceVersionTooLarge, or the legacy "Too large resource version").
func isResourceVersionTooLarge(err error) bool {
	var se *api.StatusError
	if !errors.As(err, &se) {
		return false
	}
	if d := se.Status.Details; d != nil {
		for _, c := range d.Causes {
			if c.Type == api.CauseTypeResourceVersionTooLarge {
				return true
			}
		}
	}
	return strings.Contains(se.Status.Message, "Too large resource version")
}

// isConnectionRefused reports a server that is not listening (restarting).
func isConnectionRefused(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) }

// isRetryable reports an error after which a streaming list is retried
// rather than replaced by a LIST (client-go's rule for WatchList).
func isRetryable(err error) bool {
	return client.IsExpired(err) || client.IsTooManyRequests(err) || isConnectionRefused(err)
}
