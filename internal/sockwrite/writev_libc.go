//go:build darwin || illumos || openbsd

package sockwrite

import "golang.org/x/sys/unix"

// writev is libc's writev, through golang.org/x/sys/unix: these systems
// take system calls from programs only through libc.
func writev(fd uintptr, bufs [][]byte) (int, error) {
	n, err := unix.Writev(int(fd), bufs)
	if err != nil {
		return 0, err // an errno, which Writev tests as it is
	}
	return n, nil
}

// write is libc's write, as writev.
func write(fd uintptr, b []byte) (int, error) {
	n, err := unix.Write(int(fd), b)
	if err != nil {
		return 0, err
	}
	return n, nil
}
