package cache

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/client/cache/cachetest"
)

var actionNames = map[action]string{again: "again", againLater: "againLater", relist: "relist"}

func (a action) String() string { return actionNames[a] }

func newTestReflector(opts ReflectorOptions) *Reflector[*obj] {
	return NewReflector[*obj](cachetest.NewFakeListerWatcher[*obj](), &recStore{}, opts)
}

// Ways a watch or a streaming list ends, as the Reflector sees them.
var (
	errRefused        = fmt.Errorf("dial tcp 127.0.0.1:1: %w", errConnRefused)
	errCutBeforeReply = fmt.Errorf(`Get "http://127.0.0.1:1/api/v1/configmaps": %w`, io.EOF)
	errTooLarge       = func() error {
		st := api.NewStatus(504, api.StatusReasonTimeout, "Too large resource version")
		st.Details = &api.StatusDetails{Causes: []api.StatusCause{{Type: api.CauseTypeResourceVersionTooLarge}}}
		return &api.StatusError{Status: st}
	}()
)

// TestAfterWatch: what follows each way a watch can end, the first time in
// a row.
func TestAfterWatch(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  ending
		want action
	}{
		{"closed by the server", ending{delivered: true}, again},
		{"cut inside an event (unexpected EOF)", ending{err: errCutInEvent, delivered: true}, again},
		{"connection reset", ending{err: errConnReset, delivered: true}, again},
		{"read timeout", ending{err: errReadTimeout, delivered: true}, again},
		{"HTTP/2 connection lost", ending{err: errH2ConnLost, delivered: true}, again},
		{"stalled", ending{err: ErrWatchStalled, delivered: true}, again},
		{"closed at once with nothing", ending{}, again},
		{"cut before the response", ending{err: errCutBeforeReply}, again},
		{"410 when opened", ending{err: cachetest.Gone()}, relist},
		{"410 ERROR event", ending{err: eventError(cachetest.Gone()), delivered: true}, relist},
		{"429 when opened", ending{err: cachetest.TooManyRequests(3)}, againLater},
		{"500 when opened", ending{err: cachetest.Status(500, api.StatusReasonInternalError)}, againLater},
		{"500 ERROR event", ending{err: eventError(cachetest.Status(500, api.StatusReasonInternalError)), delivered: true}, againLater},
		{"403 when opened", ending{err: cachetest.Status(403, api.StatusReasonForbidden)}, againLater},
		{"connection refused", ending{err: errRefused}, againLater},
		{"undecodable event", ending{err: errors.New("invalid character '}'"), delivered: true}, againLater},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReflector(ReflectorOptions{})
			if got, err := r.afterWatch(tc.end); got != tc.want || !errors.Is(err, tc.end.err) {
				t.Errorf("afterWatch = %v, %v; want %v, %v", got, err, tc.want, tc.end.err)
			}
		})
	}
}

// TestAfterWatchesInARow: watches that end with nothing delivered are
// reopened at once the first time in a row only; one that delivers starts
// the count and the backoff again.
func TestAfterWatchesInARow(t *testing.T) {
	r := newTestReflector(ReflectorOptions{Backoff: noJitter()})
	r.backoff.next()
	steps := []struct {
		end     ending
		want    action
		wantErr error
	}{
		{ending{}, again, nil},
		{ending{err: errConnReset}, againLater, errEmptyWatches},
		{ending{}, againLater, errEmptyWatches},
		{ending{delivered: true}, again, nil},
		{ending{err: errCutBeforeReply}, again, io.EOF},
		{ending{err: errCutBeforeReply}, againLater, io.EOF},
	}
	for i, s := range steps {
		got, err := r.afterWatch(s.end)
		if got != s.want || !errors.Is(err, s.wantErr) {
			t.Errorf("ending %d (%+v) = %v, %v; want %v, %v", i, s.end, got, err, s.want, s.wantErr)
		}
		if i == 3 && r.backoff.step != noJitter().Initial {
			t.Errorf("backoff step %v after a watch delivered, want %v", r.backoff.step, noJitter().Initial)
		}
	}
}

// TestAfterStream: what follows each way a streaming list can end before
// its initial-events-end bookmark, and what it changes for the next.
func TestAfterStream(t *testing.T) {
	for _, tc := range []struct {
		name              string
		ends              []ending // the last one is checked
		want              action
		rvUnavailable     bool // the next list asks for the current state
		cannotStreamLists bool // LIST from now on
	}{
		{"410 when opened", []ending{{err: cachetest.Gone()}}, again, true, false},
		{"410 ERROR event", []ending{{err: eventError(cachetest.Gone())}}, again, true, false},
		{"resourceVersion too large", []ending{{err: errTooLarge}}, again, true, false},
		{"422: no WatchList", []ending{{err: cachetest.Status(422, api.StatusReasonInvalid)}}, relist, false, true},
		{"400", []ending{{err: cachetest.Status(400, api.StatusReasonBadRequest)}}, relist, false, true},
		{"no bookmark in time", []ending{{err: ErrInitialEventsTimeout, delivered: true}}, relist, false, true},
		{"closed before its end", []ending{{err: errNoInitialEventsEnd, delivered: true}}, again, false, false},
		{"cut after delivering", []ending{{err: errCutInEvent, delivered: true}}, again, false, false},
		{"cut after delivering, twice", []ending{{err: errCutInEvent, delivered: true}, {err: errConnReset, delivered: true}}, again, false, false},
		{"cut after delivering, the third time", []ending{{err: errCutInEvent, delivered: true}, {err: errConnReset, delivered: true}, {err: errCutInEvent, delivered: true}}, relist, false, false},
		{"cut before the response", []ending{{err: errCutBeforeReply}}, again, false, false},
		{"cut before the response, twice", []ending{{err: errCutBeforeReply}, {err: errCutBeforeReply}}, againLater, false, false},
		{"429", []ending{{err: cachetest.TooManyRequests(2)}}, againLater, false, false},
		{"500 when opened", []ending{{err: cachetest.Status(500, api.StatusReasonInternalError)}}, againLater, false, false},
		{"503 ERROR event", []ending{{err: eventError(cachetest.Status(503, api.StatusReasonServiceUnavailable)), delivered: true}}, againLater, false, false},
		{"403 when opened", []ending{{err: cachetest.Status(403, api.StatusReasonForbidden)}}, againLater, false, false},
		{"connection refused", []ending{{err: errRefused}}, againLater, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newTestReflector(ReflectorOptions{UseWatchList: true})
			var got action
			for _, end := range tc.ends {
				got, _ = r.afterStream(end)
			}
			if got != tc.want || r.rvUnavailable != tc.rvUnavailable || r.watchListOff != tc.cannotStreamLists {
				t.Errorf("afterStream = %v, rvUnavailable %v, watchListOff %v; want %v, %v, %v",
					got, r.rvUnavailable, r.watchListOff, tc.want, tc.rvUnavailable, tc.cannotStreamLists)
			}
		})
	}
}
