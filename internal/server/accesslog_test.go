package server

import (
	"bytes"
	"context"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// lockedBuffer is a bytes.Buffer safe for the flusher and the test.
type lockedBuffer struct {
	mu     sync.Mutex
	b      bytes.Buffer
	writes int
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.writes++
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestAccessLog(t *testing.T) {
	var out lockedBuffer
	a := newAccessLog(&out, 50*time.Millisecond)
	log := a.logger()
	for i := range 3 {
		log.LogAttrs(context.Background(), slog.LevelInfo, "request", slog.String("path", "/a b"), slog.Int("n", i))
	}
	// The timer writes them, in order, as slog's default handler formats them.
	deadline := time.Now().Add(10 * time.Second)
	for out.String() == "" && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	line := regexp.MustCompile(`^\d{4}/\d\d/\d\d \d\d:\d\d:\d\d INFO request path="/a b" n=(\d)$`)
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	if len(lines) != 3 {
		t.Fatalf("%d writes of %q", out.writes, out.String())
	}
	for i, l := range lines {
		if m := line.FindStringSubmatch(l); m == nil || m[1] != string(rune('0'+i)) {
			t.Errorf("line %d: %q", i, l)
		}
	}
	// Close writes what is buffered; later lines go out at once.
	log.Info("request", "n", 3)
	a.close()
	if !strings.Contains(out.String(), "n=3") {
		t.Errorf("close did not write the buffered line: %q", out.String())
	}
	log.Info("request", "n", 4)
	if !strings.Contains(out.String(), "n=4") {
		t.Errorf("a line after close was not written: %q", out.String())
	}
	a.close() // again: no effect
}

func TestAccessLogFull(t *testing.T) {
	var out lockedBuffer
	a := newAccessLog(&out, time.Hour)
	defer a.close()
	long := strings.Repeat("x", accessLogBuffer/4)
	for i := range 4 {
		if got := strings.Count(out.String(), "\n"); got != 0 {
			t.Fatalf("%d lines written before the buffer filled", got)
		}
		a.logger().Info("request", "n", i, "pad", long)
	}
	if got := strings.Count(out.String(), "\n"); got != 4 || out.writes != 1 {
		t.Errorf("a full buffer wrote %d lines in %d writes, want 4 in 1", got, out.writes)
	}
}
