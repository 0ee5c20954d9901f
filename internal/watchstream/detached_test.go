package watchstream

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http/httputil"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/sockwrite"
	"github.com/listwatch/listwatch/internal/watchcache"
	"github.com/listwatch/listwatch/internal/watchstream/streamtest"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/memory"
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

// TestConnSinkSendAllocs: a send of several events (a chunk of many
// pieces, 16 KiB, over MaxKeptBytes) to a client that reads allocates
// nothing once warm, in cleartext and over TLS (whose pieces are copied
// together for one tls.Conn.Write), from the watch or from its lane.
func TestConnSinkSendAllocs(t *testing.T) {
	if raceBuild {
		t.Skip("the race detector's sync.Pool drops what is put at random")
	}
	for name, connect := range map[string]func(*testing.T) (*connSink, net.Conn){"cleartext": cleartextSink, "tls": tlsSink} {
		t.Run(name, func(t *testing.T) {
			sink, client := connect(t)
			done := make(chan struct{})
			go func() {
				defer close(done)
				_, _ = io.Copy(io.Discard, client)
			}()
			t.Cleanup(func() { sink.conn.Close(); <-done })
			items := make([]watchcache.Item, 12)
			for i := range items {
				items[i] = watchcache.Item{Type: api.Modified, Object: []byte(`{"pad":"` + strings.Repeat("x", 1300) + `"}`)}
			}
			e := &encoder{Encoder: plainJSON{}}
			if allocs := testing.AllocsPerRun(50, func() {
				if err := sink.send(e, items); err != nil {
					t.Fatal(err)
				}
			}); allocs != 0 {
				t.Errorf("%v allocations per send, want 0", allocs)
			}
			lane := sink.laneSink(&detachedWatch{})
			t.Cleanup(lane.Release) // before the close: its descriptor keeps the socket open
			frames := make([][]byte, len(items))
			for i, it := range items {
				frames[i] = it.Object
			}
			if allocs := testing.AllocsPerRun(50, func() {
				if whole, err := lane.SendNow(frames); !whole || err != nil {
					t.Fatalf("a lane's send to a client that reads: whole %v, %v", whole, err)
				}
			}); allocs != 0 {
				t.Errorf("%v allocations per lane send, want 0", allocs)
			}
		})
	}
}

// TestSocketConnClosesItsDescriptor: a TLS watch's socket, written through
// a descriptor of its own, is closed with its connection: by Close, or,
// when a write holds the socket's lock then, as that write releases it.
// Its client then reads the stream's end, where a descriptor left open
// would keep the socket open past the client's read deadline; and a send
// after the close fails, though a new connection may have the numbers.
func TestSocketConnClosesItsDescriptor(t *testing.T) {
	for _, held := range []bool{false, true} {
		t.Run(fmt.Sprint("held=", held), func(t *testing.T) {
			sink, client := tlsSink(t)
			sink.nonblocking = true
			if err := sink.send(&encoder{Encoder: plainJSON{}}, []watchcache.Item{{Type: api.Added, Object: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
			sock := sink.sock
			sock.mu.Lock()
			if sock.fd < 0 {
				t.Fatal("a non-blocking send made no descriptor of the socket's own")
			}
			if !held {
				sock.mu.Unlock()
			}
			if err := sock.Close(); err != nil {
				t.Fatal(err)
			}
			if held {
				sock.unlock() // the write's release
			}
			if err := client.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := io.ReadAll(client); errors.Is(err, os.ErrDeadlineExceeded) {
				t.Fatal("the socket is still open after its connection's close")
			}
			if sock.fd >= 0 {
				t.Errorf("descriptor %d still open", sock.fd)
			}
			other, _ := cleartextSink(t) // may be given the closed numbers
			if err := sink.send(&encoder{Encoder: plainJSON{}}, []watchcache.Item{{Type: api.Added, Object: []byte(`{}`)}}); err == nil {
				t.Errorf("a send after the close wrote (to %v?)", other.conn.LocalAddr())
			}
		})
	}
}

// TestCloseEndsReplayingWatchesGoingAway checks that the engine's close
// ends a WebSocket watch catching up from the store with the close frame
// of a shutdown (1001), not a normal one: the close cancels the replay,
// and the error that cuts it short is the shutdown's, even when the
// watch's goroutine sees it before the close reaches the watch (here
// always: the test cancels alone, then closes).
func TestCloseEndsReplayingWatchesGoingAway(t *testing.T) {
	store := memory.New()
	for i := range 3 {
		if _, err := store.Create(t.Context(), fmt.Sprintf("%sdefault/old%d", testPrefix, i), []byte(`{"metadata":{"name":"old"}}`)); err != nil {
			t.Fatal(err)
		}
	}
	stuck := stuckReplays{Store: store, before: 3, started: make(chan struct{})}
	x := newTestServerOn(t, Config{}, store, stuck)
	c := streamtest.DialWS(t, dial(t, x.serve("cleartext")), "/?resourceVersion=1")
	<-stuck.started
	x.e.cancel() // what Close does first
	c.ExpectClose(1001, "server shutting down")
	c.Conn.Close()
	x.e.Close()
}

// stuckReplays is a store whose watches from before revision before wait
// for their context's end, as a replay from a slow store does, saying
// so on started.
type stuckReplays struct {
	*memory.Store
	before  int64
	started chan struct{}
}

func (s stuckReplays) Watch(ctx context.Context, prefix string, from int64) (storage.Watcher, error) {
	if from >= s.before {
		return s.Store.Watch(ctx, prefix, from)
	}
	s.started <- struct{}{}
	<-ctx.Done()
	return nil, ctx.Err()
}
