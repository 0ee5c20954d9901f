//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sockwrite

import "syscall"

// maxWritevPieces bounds the pieces of one writev (the kernels take up to
// 1,024), so that the iovec array lives on the caller's stack.
const maxWritevPieces = 128

// Writev is one writev(2) of the first pieces of bufs on a non-blocking
// descriptor; it reports EAGAIN as ErrWouldBlock and retries EINTR.
func Writev(fd uintptr, bufs [][]byte) (int, error) {
	bufs = bufs[:min(len(bufs), maxWritevPieces)]
	for {
		n, err := writev(fd, bufs)
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
