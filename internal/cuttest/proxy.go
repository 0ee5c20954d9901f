package cuttest

import (
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// dialTimeout bounds the proxy's connection to its target.
const dialTimeout = 5 * time.Second

// Proxy is a TCP proxy on a loopback port in front of a target address: the
// network between a client and the server, which the test breaks at will.
// It cuts live connections (Cut, CutAll, CutEvery) and, while blocked,
// closes new ones at once, as a partitioned network would.
type Proxy struct {
	// Addr is the proxy's host:port.
	Addr   string
	target string
	ln     net.Listener
	wg     sync.WaitGroup // the accept loop and every connection's copiers

	mu      sync.Mutex
	links   []*link // live connections; guarded by mu
	blocked bool    // guarded by mu
	cuts    int     // connections cut so far; guarded by mu
}

// link is one proxied connection: the client's side and the target's.
type link struct {
	client, upstream net.Conn
	once             sync.Once
}

func (l *link) close() {
	l.once.Do(func() {
		l.client.Close()
		l.upstream.Close()
	})
}

// StartProxy listens on a free loopback port and forwards to target
// (host:port) until the test ends.
func StartProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{Addr: ln.Addr().String(), target: target, ln: ln}
	p.wg.Go(p.accept)
	t.Cleanup(p.close)
	return p
}

func (p *Proxy) accept() {
	for {
		c, err := p.ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return
		}
		if err != nil {
			continue
		}
		p.wg.Go(func() { p.forward(c) })
	}
}

// forward connects c to the target and copies both ways until either side
// ends or the link is cut.
func (p *Proxy) forward(c net.Conn) {
	up, err := net.DialTimeout("tcp", p.target, dialTimeout)
	if err != nil {
		c.Close()
		return
	}
	l := &link{client: c, upstream: up}
	if !p.add(l) {
		l.close()
		return
	}
	defer p.remove(l)
	var wg sync.WaitGroup
	wg.Go(func() { _, _ = io.Copy(up, c); l.close() })
	wg.Go(func() { _, _ = io.Copy(c, up); l.close() })
	wg.Wait()
}

// add makes l live; it reports false while the proxy is blocked.
func (p *Proxy) add(l *link) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.blocked {
		return false
	}
	p.links = append(p.links, l)
	return true
}

func (p *Proxy) remove(l *link) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, x := range p.links {
		if x == l {
			p.links = append(p.links[:i], p.links[i+1:]...)
			return
		}
	}
}

// Cut closes one live connection chosen at random; it reports whether there
// was one.
func (p *Proxy) Cut() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.links) == 0 {
		return false
	}
	p.links[rand.IntN(len(p.links))].close()
	p.cuts++
	return true
}

// CutAll closes every live connection.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.links {
		l.close()
		p.cuts++
	}
}

// CutEvery cuts every live connection after each pause drawn from
// [minPause, maxPause), until ctx ends.
func (p *Proxy) CutEvery(ctx context.Context, minPause, maxPause time.Duration) {
	for {
		pause := time.NewTimer(minPause + rand.N(maxPause-minPause))
		select {
		case <-pause.C:
			p.CutAll()
		case <-ctx.Done():
			pause.Stop()
			return
		}
	}
}

// Cuts returns how many connections have been cut.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Block makes the proxy close every connection, live and new, until
// Unblock: the client is partitioned from the server.
func (p *Proxy) Block() {
	p.mu.Lock()
	p.blocked = true
	p.mu.Unlock()
	p.CutAll()
}

// Unblock lets new connections through again.
func (p *Proxy) Unblock() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.blocked = false
}

// close stops accepting, cuts every connection and waits for the copiers.
func (p *Proxy) close() {
	p.ln.Close()
	p.CutAll()
	p.wg.Wait()
}
