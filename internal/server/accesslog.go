package server

import (
	"io"
	"log/slog"
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

// logger returns a logger whose lines read as slog's default handler
// writes them ("2006/01/02 15:04:05 INFO msg key=value ..."), buffered.
func (a *accessLog) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(a, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, attr slog.Attr) slog.Attr {
			if len(groups) == 0 && (attr.Key == slog.TimeKey || attr.Key == slog.LevelKey || attr.Key == slog.MessageKey) {
				return slog.Attr{} // in the prefix Write adds
			}
			return attr
		},
	}))
}

// accessLogPrefix stands for the time, level and message of every line.
const accessLogPrefix = "INFO request "

// Write takes one line from the handler, which writes each whole.
func (a *accessLog) Write(line []byte) (int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.buf = time.Now().AppendFormat(a.buf, "2006/01/02 15:04:05 ")
	a.buf = append(a.buf, accessLogPrefix...)
	a.buf = append(a.buf, line...)
	if a.closed || len(a.buf) >= accessLogBuffer {
		a.flushLocked()
	}
	return len(line), nil
}

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
