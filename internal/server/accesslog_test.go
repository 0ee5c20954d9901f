package server

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/testwait"
	"github.com/listwatch/listwatch/storage/memory"
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
	testwait.Until(t, 10*time.Second, "the access log's timer to write", func() bool { return out.String() != "" })
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

// messageHandler keeps the messages of the records it handles.
type messageHandler struct {
	mu       sync.Mutex
	messages []string
}

func (h *messageHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *messageHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.messages = append(h.messages, r.Message)
	return nil
}
func (h *messageHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *messageHandler) WithGroup(string) slog.Handler      { return h }

// A server without a Logger whose default logger is another handler's
// gives it one record per request, not a buffer of lines as one record.
func TestAccessLogOtherDefaultHandler(t *testing.T) {
	h := &messageHandler{}
	prev := slog.Default()
	// slog.SetDefault points the log package at the new handler (flags 0),
	// and setting the previous logger back does not undo that: restore both.
	defer func(w io.Writer, flags int) {
		slog.SetDefault(prev)
		log.SetOutput(w)
		log.SetFlags(flags)
	}(log.Writer(), log.Flags())
	slog.SetDefault(slog.New(h))
	store := memory.New()
	defer store.Close()
	s, err := New(t.Context(), Config{Storage: store})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	for range 2 {
		resp, err := ts.Client().Get(ts.URL + "/api/v1/namespaces")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	ts.Close()
	s.Close()
	h.mu.Lock()
	defer h.mu.Unlock()
	requests := 0
	for _, m := range h.messages {
		if m == "request" {
			requests++
		}
	}
	if requests != 2 {
		t.Errorf("records %q, want one \"request\" for each of 2 requests", h.messages)
	}
}

// TestAccessLogAsDefaultHandler checks that the buffered access log writes
// the lines slog's default handler writes, byte for byte, with the log
// package's flags and prefix and slog's log-logger level not at their
// defaults: the same records logged from the same lines through both, at a
// time synctest holds still.
func TestAccessLogAsDefaultHandler(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var std bytes.Buffer
		defer func(w io.Writer, flags int, prefix string) {
			log.SetOutput(w)
			log.SetFlags(flags)
			log.SetPrefix(prefix)
		}(log.Writer(), log.Flags(), log.Prefix())
		defer slog.SetLogLoggerLevel(slog.SetLogLoggerLevel(slog.LevelWarn))
		log.SetOutput(&std)
		var out lockedBuffer
		a := newAccessLog(&out, time.Hour)
		for _, flags := range []int{log.LstdFlags, log.Ldate | log.Lmicroseconds | log.LUTC | log.Lshortfile | log.Lmsgprefix, log.Ltime | log.Llongfile} {
			log.SetFlags(flags)
			log.SetPrefix(fmt.Sprintf("[%d] ", flags))
			logSamples(slog.New(stdHandler))
			logSamples(a.logger())
		}
		a.close()
		if std.Len() == 0 || strings.Contains(std.String(), "INFO") {
			t.Fatalf("slog's default handler wrote %q: want WARN and ERROR lines only", std.String())
		}
		if diff := cmp.Diff(std.String(), out.String()); diff != "" {
			t.Errorf("the access log's lines differ from slog's default handler's (-default +access log):\n%s", diff)
		}
	})
}

// logSamples logs, through l, records of every shape from the same lines.
func logSamples(l *slog.Logger) {
	ctx := context.Background()
	l.LogAttrs(ctx, slog.LevelInfo, "request", slog.String("path", "/a"))
	l.LogAttrs(ctx, slog.LevelWarn, "request", slog.String("path", "/a b"), slog.Int("n", 1), slog.Duration("d", time.Second))
	l.With("user", "alice").WithGroup("g").Warn("request", "code", 200, slog.Group("h", "x", "y z"))
	l.Error("no attributes")
}

// TestAccessLogRequestLine checks that logRequest writes a request's line
// as slog's default handler writes the same attributes, byte for byte,
// and that it leaves to the logger (appending nothing) every line whose
// text it cannot vouch for.
func TestAccessLogRequestLine(t *testing.T) {
	put := requestLine{
		method: "PUT", path: "/api/v1/namespaces/default/configmaps/cm-1", verb: "update", resource: "configmaps",
		code: 200, duration: 812345 * time.Nanosecond, bytes: 1357, user: "system:anonymous", remote: "127.0.0.1:54321",
	}
	with := func(change func(*requestLine)) requestLine {
		l := put
		change(&l)
		return l
	}
	bare := map[string]requestLine{
		"put":          put,
		"seconds":      with(func(l *requestLine) { l.duration = 3*time.Second + time.Millisecond }),
		"nanoseconds":  with(func(l *requestLine) { l.duration = 999 }),
		"zero":         with(func(l *requestLine) { l.duration, l.bytes, l.code = 0, 0, 0 }),
		"ipv6 and tls": with(func(l *requestLine) { l.remote, l.user = "[::1]:443", "alice@example.com" }),
		"punctuation":  with(func(l *requestLine) { l.path = "/apis/a.b/v1/x-y_z~!$%&'()*+,;:@[]{}|^`<>?#" }),
	}
	quoted := map[string]requestLine{
		"empty user":    with(func(l *requestLine) { l.user = "" }),
		"space":         with(func(l *requestLine) { l.path = "/a b" }),
		"equals":        with(func(l *requestLine) { l.verb = "a=b" }),
		"quote":         with(func(l *requestLine) { l.resource = `a"b` }),
		"backslash":     with(func(l *requestLine) { l.path = `/a\b` }),
		"non-ascii":     with(func(l *requestLine) { l.user = "zoë" }),
		"control":       with(func(l *requestLine) { l.method = "P\tUT" }),
		"delete":        with(func(l *requestLine) { l.remote = "a\x7f" }),
		"invalid utf-8": with(func(l *requestLine) { l.path = "/\xff" }),
	}
	synctest.Test(t, func(t *testing.T) {
		defer func(w io.Writer, flags int, prefix string) {
			log.SetOutput(w)
			log.SetFlags(flags)
			log.SetPrefix(prefix)
		}(log.Writer(), log.Flags(), log.Prefix())
		ctx := context.Background()
		for _, flags := range []int{log.LstdFlags, log.Ldate | log.Lmicroseconds | log.LUTC | log.Lmsgprefix, 0} {
			log.SetFlags(flags)
			log.SetPrefix(fmt.Sprintf("[%d] ", flags))
			for name, l := range bare {
				var std, out bytes.Buffer
				log.SetOutput(&std)
				slog.New(stdHandler).LogAttrs(ctx, slog.LevelInfo, "request", l.attrs()...)
				a := newAccessLog(&out, time.Hour)
				if !a.logRequest(ctx, &l) {
					t.Errorf("flags %d, %s: logRequest left %+v to the logger", flags, name, l)
				}
				a.close()
				if diff := cmp.Diff(std.String(), out.String()); diff != "" {
					t.Errorf("flags %d, %s: (-default handler +logRequest):\n%s", flags, name, diff)
				}
			}
		}
		leftToLogger := func(name string, l requestLine) {
			var out bytes.Buffer
			a := newAccessLog(&out, time.Hour)
			if a.logRequest(ctx, &l) {
				t.Errorf("%s: logRequest wrote %+v itself", name, l)
			}
			a.close()
			if out.Len() != 0 {
				t.Errorf("%s: logRequest appended %q to the log", name, out.String())
			}
		}
		log.SetFlags(log.LstdFlags)
		for name, l := range quoted {
			leftToLogger(name, l)
		}
		for _, flags := range []int{log.Lshortfile, log.Llongfile} {
			log.SetFlags(flags)
			leftToLogger(fmt.Sprintf("flags %d", flags), put)
		}
	})
}

// BenchmarkAccessLogRequest times one request's line through the logger
// (a slog record formatted by the TextHandler) and through logRequest.
func BenchmarkAccessLogRequest(b *testing.B) {
	l := requestLine{
		method: "PUT", path: "/api/v1/namespaces/default/configmaps/cm-1", verb: "update", resource: "configmaps",
		code: 200, duration: 812345 * time.Nanosecond, bytes: 1357, user: "system:anonymous", remote: "127.0.0.1:54321",
	}
	ctx := context.Background()
	b.Run("logger", func(b *testing.B) {
		a := newAccessLog(io.Discard, time.Hour)
		defer a.close()
		logger := a.logger()
		b.ReportAllocs()
		for b.Loop() {
			logger.LogAttrs(ctx, slog.LevelInfo, "request", l.attrs()...)
		}
	})
	b.Run("logRequest", func(b *testing.B) {
		a := newAccessLog(io.Discard, time.Hour)
		defer a.close()
		b.ReportAllocs()
		for b.Loop() {
			if !a.logRequest(ctx, &l) {
				b.Fatal("logRequest left the line to the logger")
			}
		}
	})
}
