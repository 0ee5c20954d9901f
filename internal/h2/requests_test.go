package h2_test

// Requests and responses a red-team review found mishandled: each test
// failed before its fix.

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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
	c.wantReset(1, http2.ErrCodeProtocol)
	c.wantOK(3)
}

// TestPseudoInTrailers: trailers with a pseudo-header field are
// malformed (RFC 9113 8.1): a stream error PROTOCOL_ERROR, as net/http
// answers. They were accepted.
func TestPseudoInTrailers(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, okHandler)
	c := s.dial(t)
	c.headers(1, false, advPost("/")...)
	if err := c.fr.WriteData(1, false, []byte("abc")); err != nil {
		t.Fatal(err)
	}
	c.headers(1, true, ":path", "/evil")
	c.wantReset(1, http2.ErrCodeProtocol)
	c.wantOK(3)
}

// TestDecreasingStreamID: HEADERS on a stream below the highest seen
// that was never opened is a connection error PROTOCOL_ERROR (RFC 9113
// 5.1.1, and net/http); it was STREAM_CLOSED.
func TestDecreasingStreamID(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, okHandler)
	c := s.dial(t)
	c.wantOK(5)
	c.headers(3, true, advGet("/")...)
	c.wantGoAway(http2.ErrCodeProtocol)
}

// TestConnectWithSchemeOrPath: CONNECT with :scheme or :path is
// malformed (RFC 9113 8.5: both MUST be omitted), reset PROTOCOL_ERROR
// without reaching the handler, as net/http does; one with :scheme was
// served. A CONNECT with only :method and :authority is served.
func TestConnectWithSchemeOrPath(t *testing.T) {
	noLeaks(t)
	var served atomic.Int64
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { served.Add(1) }))
	c := s.dial(t)
	for i, fields := range [][]string{
		{":method", "CONNECT", ":scheme", "https", ":authority", "x:443"},
		{":method", "CONNECT", ":path", "/", ":authority", "x:443"},
		{":method", "CONNECT", ":scheme", "https", ":path", "/", ":authority", "x:443"},
	} {
		id := uint32(2*i + 1)
		c.headers(id, true, fields...)
		if r := c.await(id); !r.reset || r.code != http2.ErrCodeProtocol || served.Load() != 0 {
			t.Errorf("%q: got %v, handler calls %d; want RST_STREAM PROTOCOL_ERROR", fields, r, served.Load())
		}
	}
	c.headers(7, true, ":method", "CONNECT", ":authority", "x:443")
	if r := c.await(7); r.status != "200" || served.Load() != 1 {
		t.Errorf("a well-formed CONNECT: %v, handler calls %d", r, served.Load())
	}
}

// TestInvalidResponseHeader: response header fields whose name is not a
// token or whose value has CR or LF are left out, as net/http leaves them
// out; they were sent, and the client rejected the whole response
// (x/net's framer: a stream error PROTOCOL_ERROR). So are connection-
// specific fields however the handler spelt them.
func TestInvalidResponseHeader(t *testing.T) {
	noLeaks(t)
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("X-Echo", "a\r\nb")
		h.Add("X-Multi", "bad\n")
		h.Add("X-Multi", "good")
		h["Bad Name"] = []string{"1"}
		h["X-Ünicode"] = []string{"1"}
		h[":status"] = []string{"500"}
		h["connection"] = []string{"close"}
		h.Set("X-Fine", "v\tw")
		_, _ = io.WriteString(w, "ok")
	}))
	c := s.dial(t)
	c.headers(1, true, advGet("/")...)
	for {
		f, err := c.next()
		if err != nil {
			t.Fatalf("reading the response: %v (a valid head was expected)", err)
		}
		h, ok := f.(*http2.MetaHeadersFrame)
		if !ok || h.StreamID != 1 {
			continue
		}
		got := map[string][]string{}
		for _, hf := range h.Fields {
			if hf.Name != "date" {
				got[hf.Name] = append(got[hf.Name], hf.Value)
			}
		}
		want := map[string][]string{
			":status": {"200"}, "content-length": {"2"}, "content-type": {"text/plain; charset=utf-8"},
			"x-multi": {"good"}, "x-fine": {"v\tw"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("response head (-want +got):\n%s", diff)
		}
		break
	}
	if r := c.await(1); string(r.body) != "ok" || !r.ended {
		t.Errorf("body: %v %q", r, r.body)
	}
}

// TestResponseContentLength: a handler's Write past the Content-Length it
// set fails with http.ErrContentLength and sends none of its bytes, as
// net/http's does (it sent them all: a malformed response, RFC 9113
// 8.1.1). A handler that returns short of its Content-Length has its
// stream ended as net/http's HTTP/2 server ends it (END_STREAM after the
// bytes written: the client finds the shortfall, Go's with
// io.ErrUnexpectedEOF).
func TestResponseContentLength(t *testing.T) {
	noLeaks(t)
	type writes struct{ errs []error }
	results := make(chan writes, 1)
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var res writes
		write := func(p string) { _, err := io.WriteString(w, p); res.errs = append(res.errs, err) }
		switch r.URL.Path {
		case "/long":
			w.Header().Set("Content-Length", "2")
			write(strings.Repeat("x", 10<<10))
		case "/long-flushed":
			w.Header().Set("Content-Length", "2")
			write("ab")
			w.(http.Flusher).Flush()
			write("c")
			write("")
		case "/long-big":
			w.Header().Set("Content-Length", "5000")
			write(strings.Repeat("x", 4999))
			write(strings.Repeat("y", 6000))
			write("z")
		case "/short":
			w.Header().Set("Content-Length", "10")
			write("ab")
		case "/invalid":
			w.Header().Set("Content-Length", "ten")
			write(strings.Repeat("x", 10))
		}
		results <- res
	}))
	c := s.dial(t)
	for i, tc := range []struct {
		path     string
		wantErrs []error
		wantBody string
	}{
		{"/long", []error{http.ErrContentLength}, ""},
		{"/long-flushed", []error{nil, http.ErrContentLength, nil}, "ab"},
		{"/long-big", []error{nil, http.ErrContentLength, nil}, strings.Repeat("x", 4999) + "z"},
		{"/short", []error{nil}, "ab"},
		{"/invalid", []error{nil}, strings.Repeat("x", 10)},
	} {
		t.Run(tc.path[1:], func(t *testing.T) {
			id := uint32(2*i + 1)
			c.headers(id, true, advGet(tc.path)...)
			r := c.await(id)
			res := <-results
			if len(res.errs) != len(tc.wantErrs) {
				t.Fatalf("writes: %v, want %v", res.errs, tc.wantErrs)
			}
			for j, err := range res.errs {
				if !errors.Is(err, tc.wantErrs[j]) {
					t.Errorf("write %d: %v, want %v", j, err, tc.wantErrs[j])
				}
			}
			if r.status != "200" || !r.ended || string(r.body) != tc.wantBody {
				t.Errorf("client got %v %.20q, want status 200, body %.20q, END_STREAM", r, r.body, tc.wantBody)
			}
		})
	}
}

// TestNonblockingSendStalledCopiesLittle: a non-blocking Send that the
// socket does not take leaves the caller's pieces in place (the watch
// cache's shared bytes), copying at most one bounded write's unsent part,
// and Flush then writes it all, in order. The connection copied the whole
// unsent remainder (32 MiB here) into its rest.
func TestNonblockingSendStalledCopiesLittle(t *testing.T) {
	noLeaks(t)
	streams := make(chan *h2.Stream, 1)
	s := startAdv(t, &h2.Server{}, detacher(t, streams, func() {}))
	c := s.dialOpen(t)
	c.headers(1, true, advGet("/watch")...)
	st := <-streams
	payload := make([]byte, 32<<20)
	for i := range payload {
		payload[i] = byte(i % 251)
	}
	before := heapInUse()
	if err := st.Send([][]byte{payload[:1<<20], payload[1<<20:]}, true); err != nil {
		t.Fatal(err)
	}
	if !st.Stalled() {
		t.Fatal("32 MiB went at once to a client that does not read")
	}
	if grew := heapInUse() - before; grew > 4<<20 {
		t.Errorf("a stalled 32 MiB send grew the heap by %d KiB", grew>>10)
	}
	got := make(chan []byte, 1)
	go func() {
		var body []byte
		defer func() { got <- body }()
		for {
			f, err := c.next()
			if err != nil {
				return
			}
			if d, ok := f.(*http2.DataFrame); ok && d.StreamID == 1 {
				body = append(body, d.Data()...)
				if d.StreamEnded() {
					return
				}
			}
		}
	}()
	waitFor(t, "the send to be written", func() bool {
		if err := st.Flush(true); err != nil {
			t.Fatal(err)
		}
		return !st.Stalled()
	})
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if body := <-got; !bytes.Equal(body, payload) {
		t.Errorf("the client read %d bytes, not the 32 MiB sent", len(body))
	}
}
