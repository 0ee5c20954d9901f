package h2_test

// Requests and responses a red-team review found mishandled: each test
// failed before its fix.

import (
	"testing"
	"time"

	"golang.org/x/net/http2"

	"github.com/listwatch/listwatch/internal/h2"
)

// TestShortBodyEndedByTrailers: a request body shorter than its
// content-length, ended by trailers, resets the stream (PROTOCOL_ERROR)
// and fails the handler's Read, as one ended by DATA with END_STREAM
// does. Before the fix the handler's Read waited until the connection
// ended.
func TestShortBodyEndedByTrailers(t *testing.T) {
	noLeaks(t)
	results := make(chan bodyResult, 1)
	s := startAdv(t, &h2.Server{}, bodyReader(results))
	c := s.dial(t)
	c.headers(1, false, advPost("/", "content-length", "10")...)
	if err := c.fr.WriteData(1, false, []byte("short")); err != nil {
		t.Fatal(err)
	}
	c.headers(1, true, "x-trailer", "1")
	select {
	case got := <-results:
		if got.err == nil {
			t.Errorf("the handler read %q as a whole body", got.body)
		}
	case <-time.After(advWait):
		t.Fatalf("the handler's read of a body ended short by trailers did not end (%v)", advWait)
	}
	if r := c.await(1); !r.reset || r.code != http2.ErrCodeProtocol {
		t.Errorf("stream: %v, want RST_STREAM PROTOCOL_ERROR", r)
	}
	c.wantOK(3)
}
