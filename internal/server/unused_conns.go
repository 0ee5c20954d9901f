package server

import (
	"net"
	"net/http"
	"sync"
)

// UnusedConns tracks an http.Server's connections that have not sent a
// request yet, so that shutdown can close them at once:
// http.Server.Shutdown closes idle connections at once but waits 5 s for
// these (Go issue 22682), and a client may have opened one in advance that
// it never uses. Closing them loses no request: net/http does not serve
// one it reads after Shutdown has begun.
type UnusedConns struct {
	mu sync.Mutex
	// guarded by mu:
	conns   map[net.Conn]struct{}
	closing bool // Close was called: a new connection is closed at once
}

// NewUnusedConns returns a tracker to install as the http.Server's
// ConnState hook (Track).
func NewUnusedConns() *UnusedConns { return &UnusedConns{conns: map[net.Conn]struct{}{}} }

// Track is the http.Server's ConnState hook. HTTP/2 connections report
// their states through it too, with the same net.Conn.
func (u *UnusedConns) Track(c net.Conn, state http.ConnState) {
	u.mu.Lock()
	defer u.mu.Unlock()
	switch {
	case state != http.StateNew:
		delete(u.conns, c)
	case u.closing:
		c.Close()
	default:
		u.conns[c] = struct{}{}
	}
}

// Close closes the connections not used yet and every later one. Call it
// just before http.Server.Shutdown.
func (u *UnusedConns) Close() {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.closing = true
	for c := range u.conns {
		c.Close()
	}
	clear(u.conns)
}
