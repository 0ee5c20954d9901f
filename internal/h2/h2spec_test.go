package h2_test

import (
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// h2specPath finds the h2spec conformance tool (.ci/run installs it with
// go install), or skips the test.
func h2specPath(t *testing.T) string {
	if p, err := exec.LookPath("h2spec"); err == nil {
		return p
	}
	if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
		p := filepath.Join(strings.TrimSpace(string(out)), "bin", "h2spec")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	t.Skip("h2spec is not installed: GOFLAGS= go install github.com/summerwind/h2spec/cmd/h2spec@latest")
	return ""
}

// TestH2spec runs every h2spec case, strict ones too, over TLS and h2c.
// In cleartext, net/http reads the preface and serves a connection whose
// preface is not HTTP/2's as HTTP/1.1 (the same port serves both), so the
// one case that wants such a connection closed fails there, as it does
// with net/http's own h2c.
func TestH2spec(t *testing.T) {
	bin := h2specPath(t)
	// The handler reads the body, so that the cases on malformed bodies
	// find the stream open whatever the timing.
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = w.Write([]byte("hello"))
	})
	for _, tls := range []bool{true, false} {
		ts := newTestServer(t, tls, handler)
		args := []string{"-S", "-o", "5", "-h", "127.0.0.1", "-p", ts.URL[strings.LastIndex(ts.URL, ":")+1:]}
		if tls {
			args = append(args, "-t", "-k")
		}
		out, err := exec.CommandContext(t.Context(), bin, args...).CombinedOutput()
		report := string(out)
		if i := strings.Index(report, "Failures:"); i >= 0 {
			report = report[i:]
		}
		summary := regexp.MustCompile(`(\d+) tests, (\d+) passed, (\d+) skipped, (\d+) failed`).FindStringSubmatch(report)
		switch {
		case summary == nil:
			t.Errorf("tls=%v: h2spec: %v\n%s", tls, err, out)
		case tls && summary[4] != "0":
			t.Errorf("tls=%v: %s\n%s", tls, summary[0], report)
		case !tls && (summary[4] != "1" || !strings.Contains(report, "Sends invalid connection preface")):
			t.Errorf("tls=%v: %s, want only the preface case failed\n%s", tls, summary[0], report)
		default:
			t.Logf("tls=%v: %s", tls, summary[0])
		}
	}
}
