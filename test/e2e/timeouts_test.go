package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"golang.org/x/net/http2"

	"github.com/listwatch/listwatch/internal/bench"
)

// shortTimeout is serve's connection timeouts' in these tests.
const shortTimeout = 500 * time.Millisecond

// shortTimeouts are the flags that set them.
var shortTimeouts = []string{
	"--read-header-timeout", shortTimeout.String(), "--idle-timeout", shortTimeout.String(),
	"--request-body-timeout", shortTimeout.String(),
}

// dial opens a loopback connection to s that fails a read after lineTimeout.
func (s *server) dial(t *testing.T) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetReadDeadline(time.Now().Add(lineTimeout))
	return c
}

// closeSlack is how long after its timeout a connection may be closed:
// generous, for a loaded machine, and far less than net/http's defaults.
const closeSlack = 10 * time.Second

// closedAfter reads c (through r) until the server closes it, and fails
// unless that is min after since, give or take closeSlack.
func closedAfter(t *testing.T, what string, c net.Conn, r io.Reader, since time.Time, min time.Duration) {
	t.Helper()
	_ = c.SetReadDeadline(since.Add(min + closeSlack))
	n, err := io.Copy(io.Discard, r)
	var ne net.Error
	switch took := time.Since(since); {
	case errors.As(err, &ne) && ne.Timeout():
		t.Errorf("%s: still open after %v", what, took)
	case took < min:
		t.Errorf("%s: closed after %v, before its timeout %v", what, took, min)
	case r == c && n > 0:
		t.Errorf("%s: %d bytes sent before the close", what, n)
	}
}

// TestConnectionTimeouts: an idle keep-alive connection is closed at the
// idle timeout (HTTP/1.1 and HTTP/2), headers that trickle in are cut at
// the header timeout and a body at the body timeout (504; a read's, which
// net/http reads after its handler, too), and watches over HTTP/1.1,
// HTTP/2 and WebSocket, open longer than all of them, still get their
// events.
func TestConnectionTimeouts(t *testing.T) {
	s := startServer(t, shortTimeouts...)
	cms := s.URL + "/api/v1/namespaces/default/configmaps"
	h1 := &http.Client{}
	h2 := &http.Client{Transport: &http.Transport{Protocols: new(http.Protocols)}}
	h2.Transport.(*http.Transport).Protocols.SetUnencryptedHTTP2(true)
	t.Cleanup(h2.CloseIdleConnections)
	watches := map[string]func(any) error{} // decodes a watch's next event
	for name, client := range map[string]*http.Client{"HTTP/1.1": h1, "HTTP/2": h2} {
		ctx, cancel := context.WithCancel(t.Context())
		t.Cleanup(cancel)
		req, _ := http.NewRequestWithContext(ctx, "GET", cms+"?watch=true", nil)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		watches[name] = json.NewDecoder(resp.Body).Decode
	}
	ws, _, err := websocket.Dial(t.Context(), strings.Replace(cms, "http://", "ws://", 1)+"?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ws.CloseNow() })
	watches["WebSocket"] = func(v any) error {
		_, msg, err := ws.Read(t.Context())
		if err != nil {
			return err
		}
		return json.Unmarshal(msg, v)
	}
	start := time.Now()

	// Each subtest's clock starts before it dials, so that it starts
	// before the server's.
	t.Run("idle HTTP/1.1", func(t *testing.T) {
		since := time.Now()
		c := s.dial(t)
		fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: %s\r\n\r\n", s.addr)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		closedAfter(t, "an idle keep-alive connection", c, br, since, shortTimeout)
	})
	t.Run("idle HTTP/2", func(t *testing.T) {
		since := time.Now()
		c := s.dial(t)
		io.WriteString(c, http2.ClientPreface)
		fr := http2.NewFramer(c, c)
		if err := fr.WriteSettings(); err != nil {
			t.Fatal(err)
		}
		for { // the server's SETTINGS and ack, then GOAWAY and the close
			f, err := fr.ReadFrame()
			if err != nil {
				closedAfter(t, "an HTTP/2 connection without streams", c, c, since, shortTimeout)
				return
			}
			if sf, ok := f.(*http2.SettingsFrame); ok && !sf.IsAck() {
				_ = fr.WriteSettingsAck()
			}
		}
	})
	t.Run("headers", func(t *testing.T) {
		since := time.Now()
		c := s.dial(t)
		fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: %s\r\n", s.addr)
		var wg sync.WaitGroup
		defer wg.Wait()
		defer c.Close()
		wg.Go(func() { // a header line every 50 ms, until the connection is closed
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for i := 0; ; i++ {
				<-tick.C
				if _, err := fmt.Fprintf(c, "X-Trickle-%d: 1\r\n", i); err != nil {
					return
				}
			}
		})
		closedAfter(t, "a connection trickling its headers", c, c, since, shortTimeout)
	})
	t.Run("body", func(t *testing.T) {
		tr := startTrickler(t, s)
		if code, took := tr.answer(t); code != http.StatusGatewayTimeout || took < shortTimeout {
			t.Errorf("a trickled body: %d after %v, want 504 at %v", code, took, shortTimeout)
		}
	})

	t.Run("read's body", func(t *testing.T) {
		since := time.Now()
		c := s.dial(t)
		fmt.Fprintf(c, "GET /readyz HTTP/1.1\r\nHost: %s\r\nContent-Length: 100\r\n\r\n{", s.addr)
		br := bufio.NewReader(c)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("a read whose body stalls: no answer after %v: %v", time.Since(since), err)
		}
		resp.Body.Close()
		closedAfter(t, "a read whose body stalls", c, br, since, shortTimeout)
	})

	if since := time.Since(start); since < shortTimeout {
		t.Fatalf("the timeouts were all met within %v", since) // the subtests wait for them
	}
	create(t, h1, cms, "after-timeouts")
	for name, next := range watches {
		var ev struct {
			Type   string `json:"type"`
			Object struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"object"`
		}
		if err := next(&ev); err != nil || ev.Type != "ADDED" || ev.Object.Metadata.Name != "after-timeouts" {
			t.Errorf("%s watch, open %v: %+v %v, want ADDED after-timeouts", name, time.Since(start), ev, err)
		}
	}
}

// create POSTs a ConfigMap named name to cms and fails unless it is 201.
func create(t *testing.T, client *http.Client, cms, name string) {
	t.Helper()
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"}}`
	resp, err := client.Post(cms, "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("create %s: %d %s", name, resp.StatusCode, b)
	}
}

// trickler is a write whose body is sent a byte at a time.
type trickler struct {
	c     net.Conn
	br    *bufio.Reader
	start time.Time
	done  chan struct{}
	wg    sync.WaitGroup
}

// startTrickler POSTs a 1 KiB body to s and returns once the server is
// reading it (its 100 Continue), sending a byte of it every 200 ms.
func startTrickler(t *testing.T, s *server) *trickler {
	t.Helper()
	start := time.Now()
	tr := &trickler{c: s.dial(t), start: start, done: make(chan struct{})}
	tr.br = bufio.NewReader(tr.c)
	fmt.Fprintf(tr.c, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: %s\r\n"+
		"Content-Type: application/json\r\nContent-Length: 1024\r\nExpect: 100-continue\r\n\r\n", s.addr)
	resp, err := http.ReadResponse(tr.br, nil)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusContinue {
		t.Fatalf("a trickled write was answered %d before its body", resp.StatusCode)
	}
	tr.wg.Go(func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-tr.done:
				return
			case <-tick.C:
				if _, err := tr.c.Write([]byte(" ")); err != nil {
					return
				}
			}
		}
	})
	t.Cleanup(tr.stop)
	return tr
}

func (tr *trickler) stop() {
	select {
	case <-tr.done:
	default:
		close(tr.done)
	}
	tr.wg.Wait()
}

// answer reads the server's answer: its code, and when it came.
func (tr *trickler) answer(t *testing.T) (int, time.Duration) {
	t.Helper()
	resp, err := http.ReadResponse(tr.br, nil)
	took := time.Since(tr.start)
	tr.stop()
	if err != nil {
		t.Errorf("a trickled write: no answer after %v: %v", took, err)
		return 0, took
	}
	resp.Body.Close()
	return resp.StatusCode, took
}

// TestTrickledBodiesUnderLoad is the reported case, bounded: 250
// connections trickle POST bodies (more than the 200 mutating slots)
// while writers keep writing; every write succeeds, every trickled body
// gets 504 at its deadline, and the server's peak RSS stays under
// maxRSS.
func TestTrickledBodiesUnderLoad(t *testing.T) {
	const tricklers, deadline, writers = 250, 3 * time.Second, 4
	const maxRSS = 256 << 20
	s := startServer(t, "--request-body-timeout", deadline.String())
	cms := s.URL + "/api/v1/namespaces/default/configmaps"
	all := make([]*trickler, tricklers)
	for i := range all {
		all[i] = startTrickler(t, s)
	}
	answered := make(chan struct{})
	var wg sync.WaitGroup
	var mu sync.Mutex
	written := 0
	for w := range writers {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-answered:
					return
				default:
				}
				create(t, http.DefaultClient, cms, fmt.Sprintf("w%d-%d", w, i))
				mu.Lock()
				written++
				mu.Unlock()
			}
		})
	}
	for i, tr := range all {
		code, took := tr.answer(t)
		if i == 0 {
			close(answered)
		}
		if code != http.StatusGatewayTimeout || took < deadline {
			t.Errorf("trickled write %d: %d after %v, want 504 at %v", i, code, took, deadline)
		}
	}
	wg.Wait()
	if written < writers {
		t.Errorf("%d writes while %d bodies trickled", written, tricklers)
	}
	u, err := bench.ReadUsage(s.cmd.Process.Pid)
	if err != nil {
		t.Fatal(err)
	}
	rss := u.HWM
	t.Logf("%d writes while %d bodies trickled; peak RSS %d MiB", written, tricklers, rss>>20)
	if rss > maxRSS {
		t.Errorf("peak RSS %d MiB, over %d MiB", rss>>20, maxRSS>>20)
	}
}
