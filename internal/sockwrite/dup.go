package sockwrite

// Dup returns a descriptor of the Writer's socket that the caller owns and
// must close (Close), for writes that must not rest on the
// connection staying open: the system cannot give its number to another
// socket before the caller closes it, and the socket stays open until
// then, whenever the connection closes (shutdown(2) acts at once still).
// It is non-blocking, as the connection's. A write to it costs no more
// than the system call, where WriteNow also reads the net package's
// descriptor lock and poller state: a few cache misses for each socket of
// a thousand written in turn.
func (w *Writer) Dup() (int, error) {
	if w == nil {
		return -1, ErrWouldBlock // no descriptor: a goroutine that can wait writes
	}
	fd, derr := -1, error(nil)
	if err := w.raw.Control(func(s uintptr) { fd, derr = dupCloseOnExec(int(s)) }); err != nil {
		return -1, err
	}
	return fd, derr
}
