//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sockwrite

import (
	"bytes"
	"errors"
	"io"
	"net"
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

// TestWrite checks that Write writes one piece, writes nothing of an
// empty one, and reports ErrWouldBlock at once on a full socket.
func TestWrite(t *testing.T) {
	w, r := socketPair(t)
	if n, err := Write(uintptr(w), []byte("abc")); err != nil || n != 3 {
		t.Fatalf("Write = %d, %v; want 3, nil", n, err)
	}
	if n, err := Write(uintptr(w), nil); err != nil || n != 0 {
		t.Fatalf("Write of nothing = %d, %v; want 0, nil", n, err)
	}
	got := make([]byte, 3)
	if _, err := io.ReadFull(r, got); err != nil || string(got) != "abc" {
		t.Fatalf("read %q, %v; want abc", got, err)
	}
	chunk := make([]byte, 64<<10)
	for total := 0; ; {
		n, err := Write(uintptr(w), chunk)
		if errors.Is(err, ErrWouldBlock) {
			break
		}
		if err != nil || n == 0 || total > 64<<20 {
			t.Fatalf("filling the socket: %d, %v after %d bytes, want ErrWouldBlock once it is full", n, err, total)
		}
		total += n
	}
}

// loopbackWriter returns a Writer on the server's end of a loopback TCP
// connection, and the client's end.
func loopbackWriter(tb testing.TB) (*Writer, net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	server, err := ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close() })
	raw, err := server.(*net.TCPConn).SyscallConn()
	if err != nil {
		tb.Fatal(err)
	}
	return NewWriter(raw), client
}

// TestWriter checks that a Writer writes what the socket takes, leaves the
// rest in bufs with ErrWouldBlock once the socket is full, allocates
// nothing per write, and that a nil one (no descriptor) writes nothing.
func TestWriter(t *testing.T) {
	if err := (*Writer)(nil).WriteNow(&net.Buffers{[]byte("x")}); !errors.Is(err, ErrWouldBlock) {
		t.Errorf("nil Writer: %v, want ErrWouldBlock", err)
	}
	w, client := loopbackWriter(t)
	piece := []byte("0123456789")
	pieces := make([][]byte, 2)
	var bufs net.Buffers
	allocs := testing.AllocsPerRun(100, func() {
		pieces[0], pieces[1] = piece, piece
		bufs = pieces
		if err := w.WriteNow(&bufs); err != nil || len(bufs) != 0 {
			t.Fatalf("WriteNow: %v, %d pieces left", err, len(bufs))
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per WriteNow, want 0", allocs)
	}
	got := make([]byte, 101*2*len(piece)) // AllocsPerRun's warm-up run too
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Repeat(piece, 202)) {
		t.Error("the socket did not get the pieces in order")
	}
	big := make([]byte, 64<<10)
	for total := 0; total < 64<<20; total += len(big) {
		bufs := net.Buffers{big}
		err := w.WriteNow(&bufs)
		if errors.Is(err, ErrWouldBlock) {
			if len(bufs) != 1 || len(bufs[0]) == 0 {
				t.Errorf("ErrWouldBlock with %d pieces left, want the unwritten rest of one", len(bufs))
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	t.Fatal("64 MiB written to a socket nobody reads, want ErrWouldBlock")
}

// TestWriteNowKeep checks that what the socket does not take is appended
// to keep, after what keep held, and bufs left empty: the bytes written
// and the bytes kept are the pieces, whole and in order.
func TestWriteNowKeep(t *testing.T) {
	w, client := loopbackWriter(t)
	const held = "held:"
	keep := []byte(held)
	var want []byte
	for i := 0; len(keep) == len(held); i++ {
		if i > 2048 {
			t.Fatal("128 MiB written to a socket nobody reads, none kept")
		}
		piece := bytes.Repeat([]byte{byte('a' + i%26)}, 64<<10)
		want = append(want, piece...)
		bufs := net.Buffers{piece[:100], piece[100:]}
		var err error
		keep, err = w.WriteNowKeep(keep, &bufs)
		if err != nil && !errors.Is(err, ErrWouldBlock) || len(bufs) != 0 {
			t.Fatalf("WriteNowKeep: %v, %d pieces left in bufs", err, len(bufs))
		}
	}
	if string(keep[:len(held)]) != held {
		t.Fatalf("keep starts %q, want what it held, %q", keep[:len(held)], held)
	}
	kept := keep[len(held):]
	got := make([]byte, len(want)-len(kept))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(append(got, kept...), want) {
		t.Error("the bytes written and the bytes kept are not the pieces in order")
	}
}

// BenchmarkWriteNow is a Writer's non-blocking write of a 1 KiB watch
// chunk in three pieces on a loopback TCP connection whose client drains
// it: the write of every send to a watch.
func BenchmarkWriteNow(b *testing.B) {
	w, client := loopbackWriter(b)
	go io.Copy(io.Discard, client)
	head, body, tail := []byte("400\r\n"), make([]byte, 1024), []byte("\r\n")
	pieces := make([][]byte, 3)
	var bufs net.Buffers
	b.ReportAllocs()
	for b.Loop() {
		pieces[0], pieces[1], pieces[2] = head, body, tail
		bufs = pieces
		for len(bufs) > 0 {
			if err := w.WriteNow(&bufs); err != nil && !errors.Is(err, ErrWouldBlock) {
				b.Fatal(err)
			}
		}
	}
}
