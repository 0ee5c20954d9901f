package sockwrite

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
)

// TestCloseWrite: over TCP and over TLS, CloseWrite ends our side (the
// client reads what was written, then EOF; over TLS the socket under
// the client's TLS reads EOF too: a FIN after the close_notify), and
// the server's reads then end at the linger's deadline.
func TestCloseWrite(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		t.Run(map[bool]string{false: "tcp", true: "tls"}[useTLS], func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			defer ln.Close()
			ca := authntest.NewCA(t)
			raw, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer raw.Close()
			_ = raw.SetReadDeadline(time.Now().Add(10 * time.Second)) // a missing FIN fails, not hangs
			accepted, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer accepted.Close()
			server, client := accepted, raw
			if useTLS {
				s := tls.Server(accepted, &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}})
				c := tls.Client(raw, &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
				done := make(chan error, 1)
				go func() { done <- s.Handshake() }()
				if err := c.Handshake(); err != nil {
					t.Fatal(err)
				}
				if err := <-done; err != nil {
					t.Fatal(err)
				}
				server, client = s, c
			}
			if _, err := server.Write([]byte("end")); err != nil {
				t.Fatal(err)
			}
			until, err := CloseWrite(server)
			if err != nil {
				t.Fatal(err)
			}
			if d := time.Until(until); d <= 0 || d > LingerTimeout {
				t.Errorf("the linger's deadline is %v from now, want within %v", d, LingerTimeout)
			}
			got, err := io.ReadAll(client)
			if err != nil || string(got) != "end" {
				t.Fatalf("the client read %q, %v; want end, then EOF", got, err)
			}
			if n, err := raw.Read(make([]byte, 1)); n != 0 || err != io.EOF {
				t.Errorf("the client's socket read %d, %v after the close; want a FIN (EOF)", n, err)
			}
			if _, err := server.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("the server's read ended with %v, want the linger's deadline", err)
			}
		})
	}
}
