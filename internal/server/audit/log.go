package audit

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// LogConfig configures a Log; its fields are kube's --audit-log-* flags.
type LogConfig struct {
	// Path is the file; "-" is standard output.
	Path string
	// MaxSizeMiB rotates the file before it grows past it; 0 never does.
	MaxSizeMiB int
	// MaxBackups is how many rotated files are kept, the newest; 0 keeps
	// them all.
	MaxBackups int
	// MaxAgeDays removes rotated files older than it, by the time in
	// their names; 0 keeps them.
	MaxAgeDays int
	// MaxEventBytes bounds an event's line; 0 means DefaultMaxEventBytes.
	MaxEventBytes int64
	// Logger receives the Log's failures; nil means slog.Default().
	Logger *slog.Logger
}

const (
	// DefaultMaxEventBytes is kube's --audit-log-truncate-max-event-size.
	// A larger event loses its request and response objects: a hostile
	// 3 MiB body, or a list of every object, is never a line of its size.
	DefaultMaxEventBytes = 100 << 10
	// queueBytes bounds the events encoded and not yet written; beyond
	// it, a disk that does not keep up loses events (counted and logged)
	// rather than holding requests.
	queueBytes = 8 << 20
	// writeWait bounds how long a request waits for its event to be
	// written. Kube's log backend blocks a request until its write
	// returns, however long; a request here goes on after writeWait, its
	// event still queued.
	writeWait = time.Second
)

// Log writes events as JSON lines, one goroutine writing what requests
// encoded, in order.
type Log struct {
	out      io.Writer
	closer   io.Closer // nil for standard output
	maxEvent int64
	log      *slog.Logger

	mu sync.Mutex
	// guarded by mu:
	queue   []byte        // encoded events not yet handed to the writer
	written chan struct{} // closed once queue's events are written
	closed  bool

	wake chan struct{} // capacity 1: the queue has events
	stop chan struct{} // closed by Close
	done chan struct{} // closed when the writer has returned

	events, errors atomic.Uint64
	lastError      atomic.Int64 // unix nanoseconds of the last failure logged
}

// OpenLog opens (creating it and its directory, private to the user) the
// file cfg names and starts the Log's writer.
func OpenLog(cfg LogConfig) (*Log, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Path == "-" {
		return newLog(os.Stdout, nil, cfg), nil
	}
	f, err := openRotating(cfg.Path, int64(cfg.MaxSizeMiB)<<20, cfg.MaxBackups, cfg.MaxAgeDays, cfg.Logger)
	if err != nil {
		return nil, err
	}
	return newLog(f, f, cfg), nil
}

// newLog starts a Log writing to out, which closer (if not nil) closes.
func newLog(out io.Writer, closer io.Closer, cfg LogConfig) *Log {
	l := &Log{
		out: out, closer: closer, maxEvent: cfg.MaxEventBytes, log: cfg.Logger, written: make(chan struct{}),
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{}),
	}
	if l.maxEvent <= 0 {
		l.maxEvent = DefaultMaxEventBytes
	}
	go l.run()
	return l
}

// Write logs ev and waits until it is written, writeWait at most. It
// returns false if ev was dropped: too large even without its objects,
// the queue full, or the Log closed.
func (l *Log) Write(ev *Event) bool {
	written, ok := l.send(ev)
	if !ok {
		return false
	}
	t := time.NewTimer(writeWait)
	defer t.Stop()
	select {
	case <-written:
	case <-t.C:
	}
	return true
}

// Send logs ev without waiting, for a goroutine that must not (a watch's
// end runs on a sender that serves other watches).
func (l *Log) Send(ev *Event) bool {
	_, ok := l.send(ev)
	return ok
}

// MaxEventBytes is the bound of an event's line.
func (l *Log) MaxEventBytes() int64 { return l.maxEvent }

// Counts are the events sent to the Log and those dropped, as kube's
// apiserver_audit_event_total and apiserver_audit_error_total.
func (l *Log) Counts() (events, errors uint64) { return l.events.Load(), l.errors.Load() }

func (l *Log) send(ev *Event) (<-chan struct{}, bool) {
	l.events.Add(1)
	line, err := l.encode(ev)
	if err != nil {
		l.fail(ev, err)
		return nil, false
	}
	l.mu.Lock()
	if l.closed || len(l.queue)+len(line) > queueBytes {
		err := errQueueFull
		if l.closed {
			err = errClosed
		}
		l.mu.Unlock()
		l.fail(ev, err)
		return nil, false
	}
	l.queue = append(l.queue, line...)
	written := l.written
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return written, true
}

var (
	errTooLarge  = errors.New("event is too large even after truncating")
	errQueueFull = errors.New("the audit log is not keeping up: its queue is full")
	errClosed    = errors.New("the audit log is closed")
)

// encode is ev's line, within maxEvent bytes: without its request and
// response objects if they make it longer, as kube's truncating backend.
func (l *Log) encode(ev *Event) ([]byte, error) {
	b, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	if int64(len(b)) < l.maxEvent {
		return append(b, '\n'), nil
	}
	if ev.RequestObject == nil && ev.ResponseObject == nil {
		return nil, errTooLarge
	}
	t := *ev
	t.RequestObject, t.ResponseObject = nil, nil
	t.Annotations = maps.Clone(ev.Annotations)
	if t.Annotations == nil {
		t.Annotations = map[string]string{}
	}
	t.Annotations[TruncatedAnnotation] = "true"
	if b, err = json.Marshal(&t); err != nil {
		return nil, err
	}
	if int64(len(b)) >= l.maxEvent {
		return nil, errTooLarge
	}
	return append(b, '\n'), nil
}

// failureLogInterval spaces the log lines of failures: a full disk fails
// every event.
const failureLogInterval = 10 * time.Second

// fail counts a dropped event and logs why, once a failureLogInterval.
func (l *Log) fail(ev *Event, err error) {
	l.errors.Add(1)
	now := time.Now().UnixNano()
	last := l.lastError.Load()
	if now-last < int64(failureLogInterval) || !l.lastError.CompareAndSwap(last, now) {
		return
	}
	if ev == nil {
		l.log.Error("writing the audit log", "err", err)
		return
	}
	l.log.Error("audit event dropped", "auditID", ev.AuditID, "stage", ev.Stage, "verb", ev.Verb, "user", ev.User.Username, "err", err)
}

// run writes what the requests queued, until Close.
func (l *Log) run() {
	defer close(l.done)
	var batch []byte
	for {
		select {
		case <-l.wake:
		case <-l.stop:
		}
		l.mu.Lock()
		batch, l.queue = l.queue, batch[:0]
		written, closed := l.written, l.closed
		l.written = make(chan struct{})
		l.mu.Unlock()
		if len(batch) > 0 {
			if _, err := l.out.Write(batch); err != nil {
				l.fail(nil, err)
			}
		}
		close(written)
		if closed {
			return
		}
		if cap(batch) > queueBytes/8 { // a burst's buffer is not kept
			batch = nil
		}
	}
}

// Close writes the events queued and closes the file. Events sent after
// it are dropped.
func (l *Log) Close() error {
	l.mu.Lock()
	if l.closed {
		l.mu.Unlock()
		return nil
	}
	l.closed = true
	l.mu.Unlock()
	close(l.stop)
	<-l.done
	if l.closer != nil {
		if err := l.closer.Close(); err != nil {
			return fmt.Errorf("closing the audit log: %w", err)
		}
	}
	return nil
}
