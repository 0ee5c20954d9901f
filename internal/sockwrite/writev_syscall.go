//go:build dragonfly || freebsd || linux || netbsd

package sockwrite

import (
	"syscall"
	"unsafe"
)

// writev is one writev(2) system call, made directly, with its iovec
// array on the stack: no allocation per send. Empty pieces are left out.
// It is a raw system call (syscall.RawSyscall, where Go's own Writev uses
// syscall.Syscall), which does not tell the scheduler it has left Go
// (entersyscall, exitsyscall, and the sysmon wake-ups they can make):
// the descriptor is non-blocking (Writev's contract; the net package's
// always are), so the call never waits, though it may work a while (on
// loopback the kernel delivers the bytes within it). The scheduler's
// part of a send was ~0.7 % of the senders' CPU in a profile of 1,000
// watches x 50 writes/s.
func writev(fd uintptr, bufs [][]byte) (int, error) {
	var iov [maxWritevPieces]syscall.Iovec
	n := 0
	for _, b := range bufs {
		if len(b) > 0 {
			iov[n].Base = &b[0]
			iov[n].SetLen(len(b))
			n++
		}
	}
	if n == 0 {
		return 0, nil
	}
	w, _, errno := syscall.RawSyscall(syscall.SYS_WRITEV, fd, uintptr(unsafe.Pointer(&iov[0])), uintptr(n))
	if errno != 0 {
		return 0, errno
	}
	return int(w), nil
}

// write is one write(2) system call, made directly, as writev.
func write(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	w, _, errno := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)))
	if errno != 0 {
		return 0, errno
	}
	return int(w), nil
}
