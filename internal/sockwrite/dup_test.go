//go:build darwin || dragonfly || freebsd || illumos || linux || netbsd || openbsd

package sockwrite

import (
	"errors"
	"io"
	"net"
	"testing"
)

// TestDup: a descriptor from Dup keeps writing to its own socket after the
// connection is closed and a new one opened (which the system may give
// the closed number); the new one's client reads only its own bytes, and
// the first client reads the stream's end once the descriptor is closed.
func TestDup(t *testing.T) {
	if _, err := (*Writer)(nil).Dup(); !errors.Is(err, ErrWouldBlock) {
		t.Errorf("nil Writer: %v, want ErrWouldBlock", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	connect := func() (client, server net.Conn, fd uintptr) {
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { client.Close() })
		server, err = ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { server.Close() })
		raw, err := server.(*net.TCPConn).SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		if err := raw.Control(func(s uintptr) { fd = s }); err != nil {
			t.Fatal(err)
		}
		return client, server, fd
	}
	client1, server1, fd1 := connect()
	raw, err := server1.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	own, err := NewWriter(raw).Dup()
	if err != nil {
		t.Fatal(err)
	}
	server1.Close()
	client2, server2, fd2 := connect()
	t.Logf("the first connection's descriptor %d, the second's %d", fd1, fd2)

	if n, err := Writev(uintptr(own), [][]byte{[]byte("one")}); n != 3 || err != nil {
		t.Fatalf("writing through the duplicate after the close: %d, %v", n, err)
	}
	if _, err := server2.Write([]byte("two")); err != nil {
		t.Fatal(err)
	}
	server2.Close()
	if got, err := io.ReadAll(client2); string(got) != "two" || err != nil {
		t.Errorf("the second client read %q (%v), want only its own %q", got, err, "two")
	}
	if err := Close(own); err != nil {
		t.Fatal(err)
	}
	if got, err := io.ReadAll(client1); string(got) != "one" || err != nil {
		t.Errorf("the first client read %q (%v) to the end, want %q", got, err, "one")
	}
}
