package cli

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// stopBound is how long serve may take to stop in TestServeStopsPromptly:
// below the 5 s http.Server.Shutdown waits for a connection that never sent
// a request, above the 1 s an idle HTTP/2 connection is given to read its
// GOAWAY before it is closed (golang/go#18701). Without HTTP/2 clients
// serve stops in milliseconds.
const stopBound = 2 * time.Second

// TestServeStopsPromptly checks what SIGTERM does to `listwatch serve`: a
// connection that never sent a request and idle HTTP/1.1 and HTTP/2 ones are
// closed at once, a request in flight is finished, watches (HTTP/1.1 and
// h2c) end with their clean end, and serve returns within stopBound.
func TestServeStopsPromptly(t *testing.T) {
	url, stop := runServe(t)
	addr := strings.TrimPrefix(url, "http://")
	dial := func() net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		return c
	}
	silent := dial()
	var h1, h2c http.Protocols
	h1.SetHTTP1(true)
	h2c.SetUnencryptedHTTP2(true)
	h2cClient := &http.Client{Transport: &http.Transport{Protocols: &h2c}}
	t.Cleanup(h2cClient.CloseIdleConnections)
	for _, p := range []*http.Protocols{&h1, &h2c} { // each leaves an idle connection
		tr := &http.Transport{Protocols: p}
		t.Cleanup(tr.CloseIdleConnections)
		resp, err := (&http.Client{Transport: tr}).Get(url + "/readyz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	watch, err := http.Get(url + "/api/v1/namespaces/default/configmaps?watch=true")
	if err != nil || watch.StatusCode != http.StatusOK {
		t.Fatalf("watch: %v %v", watch, err)
	}
	defer watch.Body.Close()
	h2Watch, err := h2cClient.Get(url + "/api/v1/namespaces/default/configmaps?watch=true")
	if err != nil || h2Watch.StatusCode != http.StatusOK || h2Watch.ProtoMajor != 2 {
		t.Fatalf("h2c watch: %v %v", h2Watch, err)
	}
	defer h2Watch.Body.Close()
	// A create whose handler is reading its body: the server asks for it
	// with 100 Continue when the handler first reads.
	const body = `{"metadata":{"name":"in-flight"}}`
	inFlight := dial()
	fmt.Fprintf(inFlight, "POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
	r := bufio.NewReader(inFlight)
	if line, err := r.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("waiting for 100 Continue: %q %v", line, err)
	}
	if _, err := r.ReadString('\n'); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	for name, body := range map[string]io.Reader{"HTTP/1.1": watch.Body, "h2c": h2Watch.Body} {
		if _, err := io.Copy(io.Discard, body); err != nil {
			t.Errorf("the %s watch did not end cleanly: %v", name, err)
		}
	}
	fmt.Fprint(inFlight, body)
	resp, err := http.ReadResponse(r, nil)
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Errorf("the create in flight: %v %v, want 201", resp, err)
	}
	if n, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the silent connection: read %d bytes, %v; want EOF", n, err)
	}
	if err := <-stopped; err != nil {
		t.Errorf("serve: %v", err)
	}
	elapsed := time.Since(start)
	t.Logf("serve stopped in %v", elapsed)
	if elapsed > stopBound {
		t.Errorf("serve took %v to stop, want at most %v", elapsed, stopBound)
	}
}
