package h2_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/h2"
)

// TestBodyReadDeadline: http.ResponseController.SetReadDeadline bounds a
// handler's reads of its request body: the bytes that came are read, and
// a read that would wait past the deadline fails with
// os.ErrDeadlineExceeded, however open the stream; a body that ends
// before it is read whole.
func TestBodyReadDeadline(t *testing.T) {
	noLeaks(t)
	const deadline = 200 * time.Millisecond
	results := make(chan timedRead, 2)
	s := startAdv(t, &h2.Server{}, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		if err := http.NewResponseController(w).SetReadDeadline(start.Add(deadline)); err != nil {
			t.Errorf("SetReadDeadline: %v", err)
		}
		b, err := io.ReadAll(r.Body)
		results <- timedRead{bodyResult{b, err}, time.Since(start)}
	}))
	c := s.dial(t)
	c.headers(1, false, advPost("/stalls")...)
	if err := c.fr.WriteData(1, false, []byte("ab")); err != nil {
		t.Fatal(err)
	}
	if r := c.await(1); r.status != "200" {
		t.Errorf("a stalled body's stream: %v, want 200", r)
	}
	got := nextRead(t, results)
	if string(got.body) != "ab" || !errors.Is(got.err, os.ErrDeadlineExceeded) || got.took < deadline {
		t.Errorf("a stalled body: read %q, %v after %v; want ab, %v at %v", got.body, got.err, got.took, os.ErrDeadlineExceeded, deadline)
	}

	c.headers(3, false, advPost("/whole")...)
	if err := c.fr.WriteData(3, true, []byte("cd")); err != nil {
		t.Fatal(err)
	}
	if r := c.await(3); r.status != "200" {
		t.Errorf("a whole body's stream: %v, want 200", r)
	}
	if got := nextRead(t, results); string(got.body) != "cd" || got.err != nil {
		t.Errorf("a whole body: read %q, %v", got.body, got.err)
	}
}

// timedRead is what a handler read of its body, and how long that took.
type timedRead struct {
	bodyResult
	took time.Duration
}

// nextRead is the next read on results, failing the test after advWait.
func nextRead(t *testing.T, results <-chan timedRead) timedRead {
	t.Helper()
	select {
	case r := <-results:
		return r
	case <-time.After(advWait):
		t.Fatal("the handler's read did not end")
		return timedRead{}
	}
}
