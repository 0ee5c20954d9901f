//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sockwrite

import "syscall"

// maxWritevPieces bounds the pieces of one writev (the kernels take up to
// 1,024), so that the iovec array lives on the caller's stack.
const maxWritevPieces = 128

// Writev is one writev(2) of the first pieces of bufs on a non-blocking
// descriptor (a write(2), Write, of one piece); it reports EAGAIN as
// ErrWouldBlock and retries EINTR.
func Writev(fd uintptr, bufs [][]byte) (int, error) {
	if len(bufs) == 1 {
		return Write(fd, bufs[0])
	}
	bufs = bufs[:min(len(bufs), maxWritevPieces)]
	return nonblocking(func() (int, error) { return writev(fd, bufs) })
}

// Write is one write(2) of b on a non-blocking descriptor, as Writev: for
// one piece, the kernel's write takes less than a writev of it (no iovec
// to import).
func Write(fd uintptr, b []byte) (int, error) {
	return nonblocking(func() (int, error) { return write(fd, b) })
}

// nonblocking makes a system call on a non-blocking descriptor, again if
// interrupted (EINTR), and reports EAGAIN as ErrWouldBlock.
func nonblocking(call func() (int, error)) (int, error) {
	for {
		n, err := call()
		switch err {
		case nil:
			return n, nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, ErrWouldBlock
		}
		return 0, err
	}
}
