//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sockwrite

import "syscall"

// dupCloseOnExec duplicates fd, its copy closed on exec as the net
// package's descriptors are (under syscall.ForkLock: no child started
// meanwhile inherits it).
func dupCloseOnExec(fd int) (int, error) {
	syscall.ForkLock.RLock()
	defer syscall.ForkLock.RUnlock()
	nfd, err := syscall.Dup(fd)
	if err != nil {
		return -1, err
	}
	syscall.CloseOnExec(nfd)
	return nfd, nil
}

// Close closes a descriptor from Dup.
func Close(fd int) error { return syscall.Close(fd) }
