package e2e

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/listwatch/listwatch/internal/server/authn/authntest"
	"github.com/listwatch/listwatch/internal/testwait"
)

// Deadlines: generous, because the race detector and a loaded 2-core
// machine slow everything down several times.
const (
	startTimeout = 60 * time.Second
	stopTimeout  = 30 * time.Second
	lineTimeout  = 30 * time.Second
)

// binary is the listwatch binary TestMain builds.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "listwatch-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "listwatch")
	out, err := exec.Command("go", "build", "-o", binary, "github.com/listwatch/listwatch/cmd/listwatch").CombinedOutput()
	if err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// server is a `listwatch serve` process on a loopback port.
type server struct {
	URL     string
	addr    string
	dataDir string
	cmd     *exec.Cmd
	logs    *bytes.Buffer
	done    chan struct{} // closed when the process has exited
	// https is the client of a server on TLS (startTLSServer), and
	// caFile the PEM file of the CA it trusts; nil and "" for one in the
	// clear.
	https  *http.Client
	caFile string
}

// httpClient is the client that reaches s.
func (s *server) httpClient() *http.Client {
	if s.https != nil {
		return s.https
	}
	return http.DefaultClient
}

// bearer makes a request to s with a bearer token ("" for none) and
// returns the code and body.
func (s *server) bearer(t *testing.T, token, method, path, body string) (int, []byte) {
	t.Helper()
	resp := s.do(t, token, method, path, body)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, b
}

// do sends a request with a JSON body to s with a bearer token ("" for
// none); the caller closes the response's body.
func (s *server) do(t *testing.T, token, method, path, body string) *http.Response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, s.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := s.httpClient().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return resp
}

// tokenFile writes a --token-auth-file of lines (token,user,uid,"groups").
func tokenFile(t *testing.T, lines ...string) string {
	t.Helper()
	return writeFile(t, t.TempDir(), "tokens.csv", strings.Join(lines, "\n")+"\n")
}

// writeFile writes content to name in dir and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	authntest.WriteFile(t, path, content)
	return path
}

// freeAddr returns a loopback address nothing listens on, so a restarted
// server can come back at the same address.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// needKubectl is the path of the kubectl installed, skipping the test
// when there is none.
func needKubectl(t *testing.T) string {
	t.Helper()
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	return kubectl
}

// startServer runs a server on a fresh data directory and a free port,
// with args added to serve's flags; it is stopped when the test ends.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	s := &server{addr: freeAddr(t), dataDir: t.TempDir()}
	s.URL = "http://" + s.addr
	s.start(t, args...)
	t.Cleanup(func() { s.stop(t) })
	return s
}

// start runs the process, with args added to serve's flags, and waits
// until it serves /readyz.
func (s *server) start(t *testing.T, args ...string) {
	t.Helper()
	s.logs = &bytes.Buffer{}
	flags := []string{"serve", "--listen", s.addr, "--data-dir", s.dataDir, "--unsafe-no-fsync"}
	s.cmd = exec.Command(binary, append(flags, args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	s.waitReady(t)
}

func (s *server) waitReady(t *testing.T) {
	t.Helper()
	testwait.UntilNil(t, startTimeout, "listwatch serve to be ready", func() error {
		select {
		case <-s.done:
			t.Fatalf("listwatch serve exited:\n%s", s.logs)
		default:
		}
		resp, err := s.getReady()
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("/readyz %d; log:\n%s", resp.StatusCode, s.logs)
		}
		return nil
	})
}

// getReady asks for /readyz: with the test's own TLS client if it has one,
// else over TLS (secure mode) trusting the server CA in the data directory,
// once the server has made it.
func (s *server) getReady() (*http.Response, error) {
	if s.https != nil {
		return s.https.Get(s.URL + "/readyz")
	}
	if !strings.HasPrefix(s.URL, "https:") {
		return http.Get(s.URL + "/readyz")
	}
	ca, err := os.ReadFile(filepath.Join(s.dataDir, "pki", "server-ca.crt"))
	if err != nil {
		return nil, err
	}
	tr := trusting(ca)
	defer tr.CloseIdleConnections()
	return (&http.Client{Transport: tr}).Get(s.URL + "/readyz")
}

// trusting is a transport that trusts the CA certificates of ca alone.
func trusting(ca []byte) *http.Transport {
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca)
	return &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
}

// stop ends the process with SIGTERM and waits for it (idempotent).
func (s *server) stop(t *testing.T) {
	t.Helper()
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(stopTimeout):
		_ = s.cmd.Process.Kill()
		<-s.done
		t.Errorf("listwatch serve ignored SIGTERM for %v", stopTimeout)
	}
	if t.Failed() {
		t.Logf("server log:\n%s", s.logs)
	}
}

// cliEnv keeps the machine's kubeconfig out of the tests.
func cliEnv(t *testing.T) []string {
	return append(os.Environ(), "KUBECONFIG="+filepath.Join(t.TempDir(), "none"), "HOME="+t.TempDir())
}

// run runs the CLI against s and returns its stdout; it fails the test
// unless the command succeeds.
func (s *server) run(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := s.try(t, args...)
	if err != nil {
		t.Fatalf("listwatch %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

// try runs the CLI against s and returns stdout, stderr and its error.
func (s *server) try(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, append(args, "--server", s.URL)...)
	cmd.Env = cliEnv(t)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	return out.String(), errOut.String(), err
}

// stream is a long-running CLI command whose output is read line by line.
type stream struct {
	lines chan string
	cmd   *exec.Cmd
}

// follow starts a long-running CLI command against url; it is killed when
// the test ends.
func follow(t *testing.T, url string, args ...string) *stream {
	t.Helper()
	cmd := exec.Command(binary, append(args, "--server", url)...)
	cmd.Env = cliEnv(t)
	return startStream(t, cmd)
}

// startStream starts cmd and reads its output line by line; it is stopped
// when the test ends.
func startStream(t *testing.T, cmd *exec.Cmd) *stream {
	t.Helper()
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	st := &stream{lines: make(chan string, 100), cmd: cmd}
	go func() {
		defer close(st.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			st.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s stderr:\n%s", strings.Join(cmd.Args, " "), errOut.String())
		}
	})
	return st
}

// next returns the next line, failing the test if none comes in time.
func (st *stream) next(t *testing.T) string {
	t.Helper()
	select {
	case l, ok := <-st.lines:
		if !ok {
			t.Fatal("the command ended")
		}
		return l
	case <-time.After(lineTimeout):
		t.Fatalf("no output for %v", lineTimeout)
	}
	return ""
}

// expectLines reads one line per pattern and matches them in order.
func (st *stream) expectLines(t *testing.T, patterns ...string) []string {
	t.Helper()
	var got []string
	for _, p := range patterns {
		l := st.next(t)
		if !regexp.MustCompile(p).MatchString(l) {
			t.Fatalf("line %q does not match %q (after %q)", l, p, got)
		}
		got = append(got, l)
	}
	return got
}
