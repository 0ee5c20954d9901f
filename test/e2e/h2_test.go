package e2e

import (
	"bufio"
	"bytes"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/listwatch/listwatch/internal/h2"
)

// TestH2MadeYouReset is the reported MadeYouReset (CVE-2025-8671): on an
// h2c connection to `listwatch serve`, streams that create a ConfigMap
// and then overflow their own window, which the server resets. The
// connection ends with GOAWAY ENHANCE_YOUR_CALM after at most
// h2.DefaultMaxResets such resets, no more creates are handled than
// streams were reset, and the server still serves. Before, the resets
// went uncounted: 16 such connections made 1.7 M streams in 12 s.
func TestH2MadeYouReset(t *testing.T) {
	s := startServer(t)
	nc, err := net.Dial("tcp", s.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fr := http2.NewFramer(nc, nc)
	var hbuf bytes.Buffer
	henc := hpack.NewEncoder(&hbuf)
	_ = nc.SetDeadline(time.Now().Add(lineTimeout))
	if _, err := io.WriteString(nc, http2.ClientPreface); err != nil {
		t.Fatal(err)
	}
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	type end struct {
		resets int
		goAway *http2.GoAwayFrame
		err    error
	}
	ended := make(chan end, 1)
	go func() { // the reader: the server's resets until its GOAWAY
		var e end
		for {
			f, err := fr.ReadFrame()
			if err != nil {
				e.err = err
				break
			}
			if _, ok := f.(*http2.RSTStreamFrame); ok {
				e.resets++
			}
			if g, ok := f.(*http2.GoAwayFrame); ok {
				e.goAway = g
				break
			}
		}
		ended <- e
	}()
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"myr-"}}`)
	for id := uint32(1); id < 2*5*h2.DefaultMaxResets; id += 2 {
		hbuf.Reset()
		fields := []string{":method", "POST", ":scheme", "http", ":path", "/api/v1/namespaces/default/configmaps", ":authority", s.addr, "content-type", "application/json"}
		for i := 0; i < len(fields); i += 2 {
			_ = henc.WriteField(hpack.HeaderField{Name: fields[i], Value: fields[i+1]})
		}
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: hbuf.Bytes(), EndHeaders: true}) != nil ||
			fr.WriteData(id, true, body) != nil || fr.WriteWindowUpdate(id, 1<<31-1) != nil {
			break // the server has ended the connection
		}
	}
	e := <-ended
	if e.goAway == nil || e.goAway.ErrCode != http2.ErrCodeEnhanceYourCalm {
		t.Fatalf("the connection ended with %v (%v) after %d resets, want GOAWAY ENHANCE_YOUR_CALM", e.goAway, e.err, e.resets)
	}
	if e.resets > h2.DefaultMaxResets {
		t.Errorf("%d resets before GOAWAY, budget %d", e.resets, h2.DefaultMaxResets)
	}
	n := createsHandled(t, s)
	t.Logf("%d resets, then GOAWAY %v; %d creates handled", e.resets, e.goAway.ErrCode, n)
	if n > e.resets+1 {
		t.Errorf("%d creates handled for %d streams reset", n, e.resets+1)
	}
	s.run(t, "get", "configmaps") // the server still serves
}

// createsHandled sums the server's apiserver_request_total of ConfigMap
// creates.
func createsHandled(t *testing.T, s *server) int {
	t.Helper()
	resp, err := http.Get(s.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	line := regexp.MustCompile(`^apiserver_request_total\{.*\} (\S+)$`)
	n := 0
	for sc := bufio.NewScanner(resp.Body); sc.Scan(); {
		l := sc.Text()
		m := line.FindStringSubmatch(l)
		if m == nil || !strings.Contains(l, `verb="POST"`) || !strings.Contains(l, `resource="configmaps"`) {
			continue
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		n += int(v)
	}
	return n
}
