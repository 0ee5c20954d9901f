//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sockwrite

import (
	"bytes"
	"errors"
	"io"
	"os"
	"syscall"
	"testing"
)

// socketPair returns the two ends of a connected stream socket, the
// writer's descriptor non-blocking.
func socketPair(t *testing.T) (w int, r *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatalf("socketpair: %v", err)
	}
	r = os.NewFile(uintptr(fds[1]), "reader")
	t.Cleanup(func() { syscall.Close(fds[0]); r.Close() })
	if err := syscall.SetNonblock(fds[0], true); err != nil {
		t.Fatalf("setting the writer non-blocking: %v", err)
	}
	return fds[0], r
}

// TestWritev checks, on every system with a non-blocking writev, that one
// call writes the pieces in order (empty ones included, more than one
// call takes left for the next), and that a full socket reports
// ErrWouldBlock at once instead of waiting.
func TestWritev(t *testing.T) {
	w, r := socketPair(t)
	bufs := [][]byte{[]byte("a"), nil, []byte("bc")}
	for range maxWritevPieces {
		bufs = append(bufs, []byte("d"))
	}
	n, err := Writev(uintptr(w), bufs)
	if want := 3 + maxWritevPieces - 3; err != nil || n != want { // "abc" and the d of the pieces up to maxWritevPieces
		t.Fatalf("Writev = %d, %v; want %d, nil", n, err, want)
	}
	got := make([]byte, n)
	if _, err := io.ReadFull(r, got); err != nil {
		t.Fatal(err)
	}
	if want := "abc" + string(bytes.Repeat([]byte("d"), maxWritevPieces-3)); string(got) != want {
		t.Errorf("read %q, want %q", got, want)
	}
	chunk := [][]byte{make([]byte, 64<<10)}
	for total := 0; ; total += n {
		n, err = Writev(uintptr(w), chunk)
		if errors.Is(err, ErrWouldBlock) {
			break
		}
		if err != nil || n == 0 || total > 64<<20 {
			t.Fatalf("filling the socket: %d, %v after %d bytes, want ErrWouldBlock once it is full", n, err, total)
		}
	}
}
