package cache

import (
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"syscall"

	"github.com/listwatch/listwatch/client/api"
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

// isWatchCut reports a watch stream ended by the network rather than by the
// server: the connection closed inside or between events, was reset, timed
// out, or went silent (ErrWatchStalled); or a streaming list's stream that
// ended before its initial-events-end bookmark. client-go's stream watcher
// ends such a watch quietly (utilnet.IsProbableEOF, IsTimeout), as if the
// server had closed it, and its Reflector watches (or streams) again at once.
func isWatchCut(err error) bool {
	var ne net.Error
	return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) || errors.Is(err, errNoInitialEventsEnd) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, ErrWatchStalled) || errors.As(err, &ne) && ne.Timeout() ||
		err != nil && slices.ContainsFunc(h2ConnLost, func(s string) bool { return strings.Contains(err.Error(), s) })
}

// h2ConnLost are the messages of Go's HTTP/2 errors for a lost connection,
// which have no type to test: a ping unanswered, and a GOAWAY before the
// connection closed.
var h2ConnLost = []string{"http2: client connection lost", "http2: server sent GOAWAY and closed the connection"}
