// Package h2 is listwatch's server side of HTTP/2 (RFC 9113): connections
// that serve any http.Handler, over TLS (ALPN "h2") or in cleartext with
// prior knowledge, built on golang.org/x/net/http2's Framer and hpack.
//
// It exists for detached streams. A handler may Detach its response
// (Detacher), return, and leave the stream open; the caller then writes
// DATA frames from any goroutine, one at a time (Stream.Send), without a
// goroutine or a buffer per idle stream: in cleartext a send is the frame
// headers and the caller's bytes in one writev; over TLS they are copied
// into the connection's write queue, which one flusher writes with the
// other streams' sends queued meanwhile, in full records (queue.go). When
// asked not to, a send never waits on the socket. net/http's HTTP/2
// server keeps a goroutine and a 4 KiB buffer per stream and hands every
// write to the connection's goroutine.
//
// # Concurrency
//
// Each connection has one reader, the goroutine that called ServeConn: it
// reads every frame, starts a goroutine per request for the handler (at
// most MaxConcurrentStreams at once: a returning handler starts the next
// request waiting), and ends streams the client resets. Writes from the reader, the handlers and
// detached streams are serialised by the connection's write lock; a write
// that waits on the socket holds it, and says so, so that writers that
// must not wait can step aside; over TLS a connection's flusher goroutine
// (one at a time, while its write queue is not empty) writes what they
// framed. Lock order: Stream's owner's locks (the caller of Send) before
// conn.wmu before conn.mu; conn.qmu and body.mu are leaves.
//
// # Caveats
//
// No server push, no priorities (PRIORITY frames are read and ignored),
// no 1xx responses, no Hijack; trailers a client sends are read and
// dropped.
package h2

import (
	"context"
	"crypto/tls"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"
)

// Server serves HTTP/2 connections. Its zero value uses the defaults
// below; set fields before the first connection.
type Server struct {
	// MaxConcurrentStreams is advertised and enforced: a stream beyond it
	// is refused (REFUSED_STREAM). A stream counts until it is closed
	// (both sides ended it, or one reset it), a detached one until it has
	// ended. At most as many handlers run at once: a request that comes
	// while they all run (the client reset or ended streams whose
	// handlers have not returned) waits for one to return; a request
	// beyond 4 times as many waiting ends the connection with
	// ENHANCE_YOUR_CALM, as x/net's server does.
	MaxConcurrentStreams uint32
	// MaxHeaderBytes bounds a request's header list (hpack sizes): a
	// request beyond it gets 431; a header block whose encoding goes far
	// beyond it (16 KiB), or that takes more frames than a HEADERS and 8
	// CONTINUATIONs or the full 16 KiB frames its bytes need, ends the
	// connection.
	MaxHeaderBytes uint32
	// MaxResets bounds the streams a connection may have reset in a 10 s
	// window (from the first reset after the last window): by the client,
	// or by the server for the client's frames (a stream error). One more
	// ends the connection with ENHANCE_YOUR_CALM.
	MaxResets int
	// ReadIdleTimeout is how long a connection may be silent before it is
	// pinged; PingTimeout how long the answer may take before it is
	// closed.
	ReadIdleTimeout, PingTimeout time.Duration
	// IdleTimeout is how long a connection may have no stream before it
	// is sent GOAWAY and closed.
	IdleTimeout time.Duration
	// ShutdownGrace bounds how long a connection may live after Shutdown:
	// its in-flight streams and its writes to a client that does not read.
	ShutdownGrace time.Duration
	// Logger gets connection errors at debug level; nil is slog.Default().
	Logger *slog.Logger

	mu sync.Mutex // before conn.mu
	// guarded by mu:
	conns    map[*conn]struct{}
	shutdown bool
}

// Defaults for the zero Server's fields.
const (
	// DefaultMaxConcurrentStreams is kube-apiserver's (secure_serving.go,
	// when --http2-max-streams-per-connection is 0; x/net's server allows
	// 250): a client with more streams, watches mostly, opens another
	// connection, as Go's transport does when it meets the limit.
	DefaultMaxConcurrentStreams = 100
	// DefaultMaxHeaderBytes is net/http's http.DefaultMaxHeaderBytes.
	DefaultMaxHeaderBytes = 1 << 20
	// DefaultMaxResets is ours: x/net bounds only the handlers that reset
	// streams leave running (MaxConcurrentStreams), not the resets.
	DefaultMaxResets       = 1000
	DefaultReadIdleTimeout = 60 * time.Second
	DefaultPingTimeout     = 15 * time.Second
	DefaultShutdownGrace   = 5 * time.Second
	// DefaultIdleTimeout is kube-apiserver's for its HTTP/2 connections.
	DefaultIdleTimeout = 90 * time.Second
)

func (s *Server) maxStreams() uint32 {
	if s.MaxConcurrentStreams == 0 {
		return DefaultMaxConcurrentStreams
	}
	return s.MaxConcurrentStreams
}

func (s *Server) maxHeaderBytes() uint32 {
	if s.MaxHeaderBytes == 0 {
		return DefaultMaxHeaderBytes
	}
	return s.MaxHeaderBytes
}

func (s *Server) maxResets() int {
	if s.MaxResets <= 0 {
		return DefaultMaxResets
	}
	return s.MaxResets
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

func (s *Server) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// unencryptedProto is net/http's TLSNextProto key for cleartext HTTP/2
// with prior knowledge: it has read the client's preface and hands the
// connection over inside a *tls.Conn that only carries it.
const unencryptedProto = "unencrypted_http2"

// Configure makes hs serve HTTP/2 with s: over TLS when ALPN picks "h2"
// and in cleartext with prior knowledge, as hs.Protocols allows (its
// HTTP2 and UnencryptedHTTP2), and makes hs.Shutdown shut s down too.
// hs.Close closes the connections, which ends them here.
func (s *Server) Configure(hs *http.Server) {
	if hs.TLSNextProto == nil {
		hs.TLSNextProto = map[string]func(*http.Server, *tls.Conn, http.Handler){}
	}
	hs.TLSNextProto["h2"] = func(hs *http.Server, tc *tls.Conn, h http.Handler) {
		st := tc.ConnectionState()
		s.ServeConn(tc, ConnOptions{Handler: h, Context: baseContext(h), TLS: &st, ConnState: hs.ConnState})
	}
	hs.TLSNextProto[unencryptedProto] = func(hs *http.Server, tc *tls.Conn, h http.Handler) {
		nc, ok := tc.NetConn().(interface{ UnencryptedNetConn() net.Conn })
		if !ok {
			s.logger().Warn("h2: a cleartext HTTP/2 connection without its net.Conn")
			_ = tc.NetConn().Close()
			return
		}
		s.ServeConn(nc.UnencryptedNetConn(), ConnOptions{Handler: h, Context: baseContext(h), SawPreface: true, ConnState: hs.ConnState})
	}
	hs.RegisterOnShutdown(s.Shutdown)
}

// baseContext is the context net/http gives the connection's requests
// (http.Server.BaseContext, ConnContext), which its TLSNextProto handler
// carries.
func baseContext(h http.Handler) context.Context {
	if bc, ok := h.(interface{ BaseContext() context.Context }); ok {
		return bc.BaseContext()
	}
	return context.Background()
}

// ConnOptions are one connection's.
type ConnOptions struct {
	Handler http.Handler
	// Context is the parent of every request's context (nil: Background).
	Context context.Context
	// TLS is the connection's state, set as every request's r.TLS.
	TLS *tls.ConnectionState
	// SawPreface says the client's connection preface was already read.
	SawPreface bool
	// ConnState, if set, is told when the connection becomes active (its
	// first stream) and idle (no stream left), as http.Server.ConnState
	// is by net/http's own HTTP/2.
	ConnState func(net.Conn, http.ConnState)
}

// ServeConn serves HTTP/2 on nc until the connection ends, and closes it.
// It returns once every handler of the connection has returned.
func (s *Server) ServeConn(nc net.Conn, o ConnOptions) {
	c := newConn(s, nc, o)
	s.track(c)
	defer s.untrack(c)
	c.serve()
}

// track adds c to the live connections; after Shutdown, it starts c's
// end at once (its GOAWAY follows the handshake).
func (s *Server) track(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conns == nil {
		s.conns = map[*conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	if s.shutdown {
		c.shutdown()
	}
}

func (s *Server) untrack(c *conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

func (s *Server) live() []*conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*conn, 0, len(s.conns))
	for c := range s.conns {
		out = append(out, c)
	}
	return out
}

// Shutdown sends GOAWAY on every connection, and on every later one: each
// lets its in-flight streams finish and then closes, ShutdownGrace after
// Shutdown at the latest (a client that does not read, whose GOAWAY's
// write waits, too). It does not wait: one connection's GOAWAY does not
// hold the others'.
func (s *Server) Shutdown() {
	s.mu.Lock()
	s.shutdown = true
	s.mu.Unlock()
	for _, c := range s.live() {
		c.shutdown()
	}
}
