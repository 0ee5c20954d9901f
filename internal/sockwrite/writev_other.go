//go:build !(darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd)

package sockwrite

// Writev would write on a non-blocking descriptor; where it is not
// written, every write that could block is handed to a goroutine that can
// wait.
func Writev(uintptr, [][]byte) (int, error) { return 0, ErrWouldBlock }

// Write would write on a non-blocking descriptor, as Writev.
func Write(uintptr, []byte) (int, error) { return 0, ErrWouldBlock }

// dupCloseOnExec would duplicate a descriptor, as Writev would write.
func dupCloseOnExec(int) (int, error) { return -1, ErrWouldBlock }

// Close would close a descriptor from Dup.
func Close(int) error { return nil }
