package sockwrite

import (
	"syscall"
	"unsafe"
)

// maxWritevPieces bounds the pieces of one writev (the kernel takes up to
// 1,024), so that the iovec array lives on the caller's stack.
const maxWritevPieces = 128

// Writev is one writev(2) of the first pieces of bufs on a non-blocking
// descriptor; it reports EAGAIN as ErrWouldBlock and retries EINTR.
func Writev(fd uintptr, bufs [][]byte) (int, error) {
	var iov [maxWritevPieces]syscall.Iovec
	n := 0
	for _, b := range bufs {
		if n == len(iov) {
			break
		}
		if len(b) > 0 {
			iov[n].Base = &b[0]
			iov[n].SetLen(len(b))
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	for {
		w, _, errno := syscall.Syscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
		switch errno {
		case 0:
			return int(w), nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, ErrWouldBlock
		}
		return 0, errno
	}
}
