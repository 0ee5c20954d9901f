package cache

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
)

// An action is what the Reflector does once a watch, or a streaming list
// before its end, has ended.
type action int

const (
	// again: watch (or stream) again at once from the last resourceVersion.
	again action = iota
	// againLater: the same after the backoff, or after a 429's Retry-After.
	againLater
	// relist: after a watch, load the whole state again (after the
	// backoff); after a streaming list, LIST instead, at once.
	relist
)

// ending is how a watch or a streaming list ended.
type ending struct {
	err error // nil: the server closed it
	// delivered: it gave an event or lived a second (not client-go's "very
	// short watch"): the server and the network work.
	delivered bool
}

// afterWatch decides what follows a watch, and
// returns the error to report or wait out:
//
//	the watch ...                                         then
//	ended with 410 Expired                                relist
//	was closed by the server or cut by the network (EOF,
//	  reset, timeout, lost HTTP/2 connection, stall, or
//	  cut before its response), having delivered          again
//	  having delivered nothing: the first in a row        again
//	  the next ones in a row                              againLater
//	failed otherwise: connection refused, a Status when
//	  opened (5xx, 403, 429...), an ERROR event, an
//	  undecodable event                                   againLater
//
// client-go does the same for the first three rows (its stream watcher
// ends a cut watch as if the server had closed it); after a watch that
// lived under a second with nothing, and after errors other than
// connection refused and 429, it relists after the backoff, where we
// watch again: the resourceVersion still holds until a 410 says otherwise.
func (r *Reflector[T]) afterWatch(end ending) (action, error) {
	r.noteDelivery(end.delivered)
	switch {
	case client.IsExpired(end.err):
		return relist, end.err
	case end.err != nil && !isWatchCut(end.err):
		return againLater, end.err
	case !end.delivered:
		return r.afterEmpty(end.err)
	}
	return again, end.err
}

// afterStream decides what follows a streaming list that ended before its
// initial-events-end bookmark, having synced nothing whatever it sent, and
// returns the error to report or wait out:
//
//	the streaming list ...                                then
//	was refused with 410 Expired or a resourceVersion
//	  too large                                           again, from "" (the current state)
//	was refused as a request the server does not take
//	  (400, 422: kube-apiserver without WatchList), or
//	  sent no bookmark within InitialEventsTimeout        relist, and LIST from now on
//	was closed or cut (as a watch) having delivered       again; the maxStreamCuts-th in a row: relist
//	  having delivered nothing                            as a watch: again, then againLater
//	failed otherwise: connection refused, 401, 403, 429,
//	  5xx, an ERROR event                                 againLater
//
// client-go streams again at once after a 410 and after a cut, waits out
// its backoff after connection refused and 429, and falls back to LIST
// (for this sync) after anything else. We stream again unless the server
// cannot stream lists at all, or the list outlasts the connections
// maxStreamCuts times in a row (a LIST progresses page by page).
func (r *Reflector[T]) afterStream(end ending) (action, error) {
	r.noteDelivery(end.delivered)
	switch {
	case client.IsExpired(end.err) || isResourceVersionTooLarge(end.err):
		r.rvUnavailable = true
		return again, end.err
	case cannotStreamLists(end.err):
		r.watchListOff = true
		return relist, end.err
	case !isWatchCut(end.err):
		return againLater, end.err
	case !end.delivered:
		return r.afterEmpty(end.err)
	}
	if r.streamCuts++; r.streamCuts < maxStreamCuts {
		return again, end.err
	}
	r.streamCuts = 0
	return relist, end.err
}

// noteDelivery counts the watches and streams in a row that delivered
// nothing; one that delivered resets the backoff, which only failures to
// (re)connect grow.
func (r *Reflector[T]) noteDelivery(delivered bool) {
	if delivered {
		r.empty = 0
		r.backoff.reset()
		return
	}
	r.empty++
}

// afterEmpty decides what follows a watch or stream closed or cut having
// delivered nothing: at once the first time in a row (emptyRewatches), then
// after the backoff, so that a server or proxy that closes every watch at
// once is not hit in a tight loop.
func (r *Reflector[T]) afterEmpty(err error) (action, error) {
	switch {
	case r.empty <= emptyRewatches:
		return again, err
	case err == nil:
		return againLater, errEmptyWatches
	}
	return againLater, fmt.Errorf("%w: %w", errEmptyWatches, err)
}

// cannotStreamLists reports a server that cannot stream lists: it sent no
// initial-events-end bookmark in time (one that ignores sendInitialEvents
// sends none), or refused the request's parameters, as kube-apiserver does
// with 422 Invalid when its WatchList feature is off.
func cannotStreamLists(err error) bool {
	var se *api.StatusError
	return errors.Is(err, ErrInitialEventsTimeout) ||
		errors.As(err, &se) && (se.Status.Code == http.StatusBadRequest || se.Status.Code == http.StatusUnprocessableEntity)
}
