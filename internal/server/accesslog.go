package server

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The access log of a server without a Logger of its own goes through a
// buffer: one write(2) per line cost every request ~3 µs of the ~60 µs a
// get costs (docs/PERFORMANCE.md). Every line is kept, in order; the
// buffer is written every accessLogFlush, when it holds accessLogBuffer
// bytes, and when the server closes (later lines are written at once). A
// line is written after its response, so a crash may lose the log of the
// last requests answered, never a request.
const (
	accessLogFlush  = 100 * time.Millisecond
	accessLogBuffer = 64 << 10
)

// accessLog buffers lines for out. Its goroutine, started by newAccessLog,
// flushes every interval until close.
type accessLog struct {
	out      io.Writer
	interval time.Duration

	mu     sync.Mutex
	buf    []byte
	err    error // out's first failure, reported once
	closed bool  // after close, lines go straight to out

	stop chan struct{}
	done chan struct{}
}

func newAccessLog(out io.Writer, interval time.Duration) *accessLog {
	a := &accessLog{out: out, interval: interval, buf: make([]byte, 0, accessLogBuffer), stop: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

// logger returns a logger whose lines are those slog's default handler
// writes, buffered: the same level filter (slog.SetLogLoggerLevel), the
// log package's prefix and flags (date, time, microseconds, UTC, file and
// line, message prefix) read at each line as the log package reads them,
// then "LEVEL message key=value ...".
func (a *accessLog) logger() *slog.Logger {
	attrs := slog.NewTextHandler(accessLogAttrs{a}, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, attr slog.Attr) slog.Attr {
			if len(groups) == 0 && (attr.Key == slog.TimeKey || attr.Key == slog.LevelKey || attr.Key == slog.MessageKey) {
				return slog.Attr{} // in the header Handle writes
			}
			return attr
		},
	})
	return slog.New(accessHandler{a: a, attrs: attrs})
}

// accessHandler writes a record's header as the log package does and its
// attributes through attrs, a TextHandler without time, level and message,
// whose output goes to the buffer while Handle holds a.mu.
type accessHandler struct {
	a     *accessLog
	attrs slog.Handler
}

// Enabled is the level filter of slog's default handler.
func (h accessHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return stdHandler.Enabled(ctx, level)
}

// Handle appends r's line to the buffer and writes the buffer when it is
// full or the log is closed.
func (h accessHandler) Handle(ctx context.Context, r slog.Record) error {
	a := h.a
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf = appendLogHeader(a.buf, time.Now(), r.PC)
	a.buf = append(a.buf, r.Level.String()...)
	a.buf = append(a.buf, ' ')
	a.buf = append(a.buf, r.Message...)
	err := h.attrs.Handle(ctx, r) // a.buf += " key=value ...\n"
	a.lineEndedLocked()
	if err != nil {
		return fmt.Errorf("formatting an access log line: %w", err)
	}
	return nil
}

func (h accessHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return accessHandler{a: h.a, attrs: h.attrs.WithAttrs(as)}
}

func (h accessHandler) WithGroup(name string) slog.Handler {
	return accessHandler{a: h.a, attrs: h.attrs.WithGroup(name)}
}

// accessLogAttrs appends the attributes' text to the buffer; it is called
// only from accessHandler.Handle, with a.mu held.
type accessLogAttrs struct{ a *accessLog }

func (w accessLogAttrs) Write(p []byte) (int, error) {
	if len(p) > 0 && p[0] != '\n' {
		w.a.buf = append(w.a.buf, ' ') // none before the newline of a record without attributes
	}
	w.a.buf = append(w.a.buf, p...)
	return len(p), nil
}

// appendLogHeader appends what the log package writes before a line of
// slog's default handler (log.go formatHeader), with its current prefix and
// flags; pc is the record's, for the file and line.
func appendLogHeader(buf []byte, t time.Time, pc uintptr) []byte {
	prefix, flags := log.Prefix(), log.Flags()
	if flags&log.Lmsgprefix == 0 {
		buf = append(buf, prefix...)
	}
	if flags&log.LUTC != 0 {
		t = t.UTC()
	}
	if flags&log.Ldate != 0 {
		buf = t.AppendFormat(buf, "2006/01/02 ")
	}
	if flags&(log.Ltime|log.Lmicroseconds) != 0 {
		buf = t.AppendFormat(buf, "15:04:05")
		if flags&log.Lmicroseconds != 0 {
			buf = t.AppendFormat(buf, ".000000")
		}
		buf = append(buf, ' ')
	}
	if flags&(log.Lshortfile|log.Llongfile) != 0 {
		buf = appendSource(buf, pc, flags&log.Lshortfile != 0)
	}
	if flags&log.Lmsgprefix != 0 {
		buf = append(buf, prefix...)
	}
	return buf
}

// appendSource appends "file:line: " of pc, the file's base name if short.
func appendSource(buf []byte, pc uintptr, short bool) []byte {
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	file := cmp.Or(f.File, "???")
	if i := strings.LastIndexByte(file, '/'); short && i > 0 {
		file = file[i+1:]
	}
	buf = append(buf, file...)
	buf = append(buf, ':')
	buf = strconv.AppendInt(buf, int64(f.Line), 10)
	return append(buf, ": "...)
}

// lineEndedLocked writes the buffer if the line just appended filled it or
// the log is closed.
func (a *accessLog) lineEndedLocked() {
	if a.closed || len(a.buf) >= accessLogBuffer {
		a.flushLocked()
	}
}

// flushLocked writes the buffer to out and empties it.
func (a *accessLog) flushLocked() {
	if len(a.buf) == 0 {
		return
	}
	if _, err := a.out.Write(a.buf); err != nil && a.err == nil {
		a.err = err
		slog.Error("writing the access log", "err", err)
	}
	a.buf = a.buf[:0]
}

func (a *accessLog) run() {
	defer close(a.done)
	t := time.NewTicker(a.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			a.mu.Lock()
			a.flushLocked()
			a.mu.Unlock()
		case <-a.stop:
			return
		}
	}
}

// close stops the timer and writes what is buffered; lines logged after it
// are written at once.
func (a *accessLog) close() {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		return
	}
	a.closed = true
	a.flushLocked()
	a.mu.Unlock()
	close(a.stop)
	<-a.done
}

// requestLine is what the access log says of a finished request: the
// attributes of its "request" line, in order.
type requestLine struct {
	method, path, verb, resource string
	code                         int
	duration                     time.Duration
	bytes                        int64
	user, remote                 string
}

// attrs returns l as the attributes of a slog record.
func (l *requestLine) attrs() []slog.Attr {
	return []slog.Attr{
		slog.String("method", l.method), slog.String("path", l.path),
		slog.String("verb", l.verb), slog.String("resource", l.resource),
		slog.Int("code", l.code), slog.Duration("duration", l.duration), slog.Int64("bytes", l.bytes),
		slog.String("user", l.user), slog.String("remote", l.remote),
	}
}

// logRequest appends l's line without building a slog record, formatting
// or walking the stack (a third of a lone PUT's access log cost went to
// slog's TextHandler): the bytes the logger writes for l at Info. It
// returns false, having appended nothing, when it cannot tell the line is
// the same: when the log package's flags name the caller's file (which
// needs the caller's pc) or a string attribute is one slog might quote;
// the caller then logs l through the logger.
func (a *accessLog) logRequest(ctx context.Context, l *requestLine) bool {
	if log.Flags()&(log.Lshortfile|log.Llongfile) != 0 ||
		!bareText(l.method) || !bareText(l.path) || !bareText(l.verb) || !bareText(l.resource) ||
		!bareText(l.user) || !bareText(l.remote) {
		return false
	}
	if !stdHandler.Enabled(ctx, slog.LevelInfo) {
		return true // slog's default handler drops it
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	b := appendLogHeader(a.buf, time.Now(), 0)
	b = append(b, "INFO request method="...)
	b = append(b, l.method...)
	b = append(b, " path="...)
	b = append(b, l.path...)
	b = append(b, " verb="...)
	b = append(b, l.verb...)
	b = append(b, " resource="...)
	b = append(b, l.resource...)
	b = append(b, " code="...)
	b = strconv.AppendInt(b, int64(l.code), 10)
	b = append(b, " duration="...)
	b = append(b, l.duration.String()...)
	b = append(b, " bytes="...)
	b = strconv.AppendInt(b, l.bytes, 10)
	b = append(b, " user="...)
	b = append(b, l.user...)
	b = append(b, " remote="...)
	b = append(b, l.remote...)
	a.buf = append(b, '\n')
	a.lineEndedLocked()
	return true
}

// bareText reports whether slog's TextHandler writes s as it is: s is not
// empty and holds only printable ASCII other than space, '=', '"' and '\'.
// It is stricter than slog's own test (which lets '\' and most printable
// non-ASCII through), never looser.
func bareText(s string) bool {
	if s == "" {
		return false
	}
	for i := range len(s) {
		if b := s[i]; b <= ' ' || b >= 0x7f || b == '=' || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}
