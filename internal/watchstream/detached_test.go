package watchstream

import (
	"bytes"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"strings"
	"testing"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchcache"
)

// TestConnSinkNonBlockingWrite checks that a non-blocking send to a client
// that does not read leaves the sink stalled instead of waiting, and that
// a blocking flush, then a blocking send, deliver every byte in order. Over
// TLS, the rest of the send's records wait under the tls.Conn, which sees
// no error.
func TestConnSinkNonBlockingWrite(t *testing.T) {
	for name, connect := range map[string]func(*testing.T) (*connSink, net.Conn){"cleartext": cleartextSink, "tls": tlsSink} {
		t.Run(name, func(t *testing.T) {
			sink, client := connect(t)
			sink.nonblocking = true
			// Objects far larger than loopback's socket buffers, in many pieces.
			var items []watchcache.Item
			var want bytes.Buffer
			for i := range 300 {
				obj := []byte(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 64<<10)))
				items = append(items, watchcache.Item{Type: api.Modified, Object: obj})
				want.WriteString(`{"type":"MODIFIED","object":` + string(obj) + "}\n")
			}
			if err := sink.send(&encoder{Encoder: plainJSON{}}, items); err != nil {
				t.Fatal(err)
			}
			if !sink.stalled() {
				t.Fatal("a 19 MB chunk to a client that does not read is written whole without blocking")
			}
			got := make(chan []byte)
			go func() {
				b, _ := io.ReadAll(client)
				got <- b
			}()
			sink.nonblocking = false
			if err := sink.flush(); err != nil {
				t.Fatal(err)
			}
			if sink.stalled() {
				t.Fatal("stalled after a blocking flush")
			}
			last := []byte(`{"n":"last"}`)
			if err := sink.send(&encoder{Encoder: plainJSON{}}, []watchcache.Item{{Type: api.Added, Object: last}}); err != nil {
				t.Fatalf("a send after a stalled one: %v", err)
			}
			sink.conn.Close()
			body, err := io.ReadAll(httputil.NewChunkedReader(bytes.NewReader(<-got)))
			if !errors.Is(err, io.ErrUnexpectedEOF) { // no terminating chunk: the stream did not end
				t.Fatalf("reading the chunks: %v", err)
			}
			want.WriteString(`{"type":"ADDED","object":` + string(last) + "}\n")
			if !bytes.Equal(body, want.Bytes()) {
				t.Fatalf("the chunks' %d bytes differ from the %d sent", len(body), want.Len())
			}
		})
	}
}

// cleartextSink is a sink on an accepted TCP connection, and its client.
func cleartextSink(t *testing.T) (*connSink, net.Conn) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	conn, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := conn.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	return &connSink{conn: conn, raw: sockwrite.NewWriter(raw)}, client
}

// tlsSink is a sink on a TLS connection accepted through Listener, and
// its client.
func tlsSink(t *testing.T) (*connSink, net.Conn) {
	ca := authntest.NewCA(t)
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := tls.NewListener(Listener(tcp), &tls.Config{Certificates: []tls.Certificate{ca.Server(t)}})
	defer ln.Close()
	type result struct {
		c   net.Conn
		err error
	}
	accepted := make(chan result, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			err = c.(*tls.Conn).Handshake()
		}
		accepted <- result{c, err}
	}()
	client, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})
	if err != nil {
		t.Fatal(err) // the deferred close ends the Accept
	}
	t.Cleanup(func() { client.Close() })
	r := <-accepted
	if r.err != nil {
		t.Fatal(r.err)
	}
	conn := r.c.(*tls.Conn)
	return &connSink{conn: conn, sock: conn.NetConn().(*socketConn)}, client
}
