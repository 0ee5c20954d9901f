package bench

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// epollSupported says whether this system has the epoll reader.
const epollSupported = true

// Sizes of the epoll reader.
const (
	// maxEpollLoops bounds the loops: one per two of GOMAXPROCS (at least
	// one) up to it. The server shares the machine: on two cores one loop
	// took less CPU per delivery than two (bigger batches per EpollWait,
	// fewer wake-ups) and left the server a core.
	maxEpollLoops = 4
	// epollReadBuffer is a loop's read buffer, shared by its watches: a
	// watch's unfinished line is kept by its decoder, so a watch costs no
	// buffer of its own while idle.
	epollReadBuffer = 64 << 10
	// epollBatch is the most ready sockets one EpollWait returns.
	epollBatch = 256
)

// errReadersClosed is a watch added to readers already closed.
var errReadersClosed = errors.New("the epoll readers are closed")

// epollReaders reads HTTP/1.1 cleartext watch streams with a few loops,
// each a goroutine owning one epoll instance, instead of a goroutine per
// watch. Watches are spread over the loops in turn. close stops the loops;
// each loop then closes its watches' sockets and its descriptors.
//
// A loop reads a duplicate of the watch's socket descriptor and closes the
// net.Conn at once: closing it takes the socket out of Go's netpoller,
// which (edge-triggered, with nobody waiting) would otherwise wake on every
// delivery as well; the duplicate keeps the socket open until the loop
// closes it.
type epollReaders struct {
	loops []*epollLoop
	next  atomic.Uint32 // the loop of the next watch, modulo len(loops)
	wg    sync.WaitGroup
}

// newEpollReaders starts the loops, counting deliveries into d.
func newEpollReaders(d *deliveries) (*epollReaders, error) {
	r := &epollReaders{}
	for range max(1, min(runtime.GOMAXPROCS(0)/2, maxEpollLoops)) {
		l, err := newEpollLoop(d)
		if err != nil {
			r.close()
			return nil, err
		}
		r.loops = append(r.loops, l)
		r.wg.Go(l.run)
	}
	return r, nil
}

// add hands a watch's connection to a loop, once its response headers are
// read; buffered is what was read beyond them. add closes conn, keeping
// its socket open for the loop (see epollReaders).
func (r *epollReaders) add(conn net.Conn, buffered []byte, startRV int64, shard int) error {
	l := r.loops[int(r.next.Add(1)%uint32(len(r.loops)))]
	return l.add(conn, buffered, startRV, shard)
}

// close stops the loops and waits until they have closed every connection
// and descriptor.
func (r *epollReaders) close() {
	for _, l := range r.loops {
		l.wake()
	}
	r.wg.Wait()
}

// epollLoop is one epoll instance and the watches registered in it.
//
// It is level-triggered: a read shorter than the buffer stands for EAGAIN
// (the socket was drained when it returned), saving the read that would
// only say EAGAIN; whatever arrives after it makes the next EpollWait
// report the socket again. A full read is followed by another.
type epollLoop struct {
	d      *deliveries
	epfd   int                 // the epoll instance
	wakefd int                 // an eventfd in the set; written to stop run
	buf    []byte              // read buffer; run's alone
	events []unix.EpollEvent   // run's alone
	batch  []*epollWatch       // the watches of events; run's alone
	mu     sync.Mutex          // guards watches and closed (taken by add, and by run once per EpollWait)
	closed bool                // run has stopped; epfd and wakefd are closed
	byFD   map[int]*epollWatch // the registered watches
}

// epollWatch is one watch read by a loop.
type epollWatch struct {
	fd    int // a duplicate of the watch's socket; the loop closes it
	dec   chunkDecoder
	last  int64     // the last resourceVersion counted
	shard int       // the histogram shard it records into
	now   time.Time // when the bytes being decoded were read
}

// newEpollLoop makes an epoll instance with its wake eventfd in it.
func newEpollLoop(d *deliveries) (*epollLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("creating an epoll instance: %w", err)
	}
	wakefd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("creating the epoll loop's eventfd: %w", err)
	}
	l := &epollLoop{
		d: d, epfd: epfd, wakefd: wakefd, buf: make([]byte, epollReadBuffer),
		events: make([]unix.EpollEvent, epollBatch), byFD: make(map[int]*epollWatch),
	}
	if err := l.register(wakefd); err != nil {
		l.closeFDs()
		return nil, err
	}
	return l, nil
}

// register adds fd to the set, level-triggered, for reading.
func (l *epollLoop) register(fd int) error {
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("adding descriptor %d to epoll: %w", fd, err)
	}
	return nil
}

// add decodes buffered, then registers conn's socket unless its stream
// has already ended.
func (l *epollLoop) add(conn net.Conn, buffered []byte, startRV int64, shard int) error {
	fd, err := dupSocket(conn)
	conn.Close()
	if err != nil {
		return err
	}
	w := &epollWatch{fd: fd, last: startRV, shard: shard, now: time.Now()}
	w.dec.onLine = func(line []byte) { l.d.observe(line, &w.last, w.shard, w.now) }
	if !l.decode(w, buffered) {
		unix.Close(fd)
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		unix.Close(fd)
		return errReadersClosed
	}
	if err := l.register(fd); err != nil {
		unix.Close(fd)
		return err
	}
	l.byFD[fd] = w
	return nil
}

// dupSocket duplicates the socket descriptor under conn (close-on-exec,
// and non-blocking as Go made it: the flag belongs to the socket).
func dupSocket(conn net.Conn) (int, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1, fmt.Errorf("a %T has no descriptor to read with epoll", conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("getting the watch socket: %w", err)
	}
	fd, dupErr := -1, error(nil)
	err = rc.Control(func(s uintptr) { fd, dupErr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) })
	if err = cmp.Or(err, dupErr); err != nil {
		return -1, fmt.Errorf("duplicating the watch socket's descriptor: %w", err)
	}
	return fd, nil
}

// run waits for ready sockets and reads them until wake is called or
// EpollWait fails, then closes everything.
func (l *epollLoop) run() {
	defer l.shutdown()
	for {
		n, err := unix.EpollWait(l.epfd, l.events, -1)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			l.d.errors.Add(1) // its watches end unread: they show as missed
			return
		}
		if !l.serve(l.events[:n]) {
			return
		}
	}
}

// serve reads every ready socket; it returns false when the wake eventfd
// is among them. Every delivery is counted in l.d when it returns.
func (l *epollLoop) serve(ready []unix.EpollEvent) bool {
	l.batch = l.batch[:0]
	l.mu.Lock()
	for _, ev := range ready {
		l.batch = append(l.batch, l.byFD[int(ev.Fd)])
	}
	l.mu.Unlock()
	for i, w := range l.batch {
		switch {
		case w == nil && int(ready[i].Fd) == l.wakefd:
			return false
		case w != nil && !l.read(w):
			l.remove(w)
		}
	}
	return true
}

// read reads w's socket until a short read (see epollLoop) and decodes
// what came; it returns false when the stream has ended (EOF, error, last
// chunk or malformed framing).
func (l *epollLoop) read(w *epollWatch) bool {
	for {
		n, err := unix.Read(w.fd, l.buf)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.EAGAIN):
			return true
		case err != nil || n == 0:
			w.dec.finish() // as readEvents does at EOF or a read error
			return false
		}
		// now is taken per read: the time these bytes were in hand, so the
		// last socket of a large batch is not dated from the batch's start.
		w.now = time.Now()
		if !l.decode(w, l.buf[:n]) {
			return false
		}
		if n < len(l.buf) {
			return true
		}
	}
}

// decode feeds p to w's decoder; it returns false when the stream has
// ended with p, counting malformed framing as one error.
func (l *epollLoop) decode(w *epollWatch, p []byte) bool {
	if err := w.dec.feed(p); err != nil {
		l.d.errors.Add(1)
		return false
	}
	if w.dec.done() {
		w.dec.finish()
		return false
	}
	return true
}

// remove takes an ended watch out of the set and closes its socket.
func (l *epollLoop) remove(w *epollWatch) {
	_ = unix.EpollCtl(l.epfd, unix.EPOLL_CTL_DEL, w.fd, nil)
	l.mu.Lock()
	delete(l.byFD, w.fd)
	l.mu.Unlock()
	unix.Close(w.fd)
}

// wake tells run to stop, unless it already has (its eventfd is then
// closed, and its number may belong to another file).
func (l *epollLoop) wake() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1)
	_, _ = unix.Write(l.wakefd, one[:])
}

// shutdown closes the sockets still registered and the loop's
// descriptors; add and wake do nothing after it.
func (l *epollLoop) shutdown() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.closed = true
	for fd := range l.byFD {
		unix.Close(fd)
		delete(l.byFD, fd)
	}
	l.closeFDs()
}

// closeFDs closes the epoll instance and the eventfd.
func (l *epollLoop) closeFDs() {
	unix.Close(l.wakefd)
	unix.Close(l.epfd)
}
