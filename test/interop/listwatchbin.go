package interop

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Deadlines of the real binary's life in tests: generous, because the race
// detector and a loaded 2-core machine slow everything down several times.
const (
	binStartTimeout = 60 * time.Second
	binStopTimeout  = 30 * time.Second
)

// binaries holds the programs built once per test process.
var binaries = struct {
	sync.Mutex
	dir   string
	paths map[string]string // by package
}{paths: map[string]string{}}

// BuildOnce builds the Go package pkg of the module in dir (relative to
// this package) once per test process and returns the binary's path:
// ("../..", "./cmd/listwatch") is the product's binary, built with the
// product module's own go.mod; (".", "./cmd/kubectl") is kubectl.
// RemoveBinaries deletes them.
func BuildOnce(t testing.TB, dir, pkg string) string {
	t.Helper()
	binaries.Lock()
	defer binaries.Unlock()
	key := dir + " " + pkg
	if p, ok := binaries.paths[key]; ok {
		return p
	}
	if binaries.dir == "" {
		dir, err := os.MkdirTemp("", "listwatch-interop-bin-")
		if err != nil {
			t.Fatalf("temp dir for binaries: %v", err)
		}
		binaries.dir = dir
	}
	out := filepath.Join(binaries.dir, filepath.Base(pkg))
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build %s in %s: %v\n%s", pkg, dir, err, b)
	}
	binaries.paths[key] = out
	return out
}

// RemoveBinaries deletes what BuildOnce built; call it from TestMain.
func RemoveBinaries() {
	binaries.Lock()
	defer binaries.Unlock()
	if binaries.dir != "" {
		os.RemoveAll(binaries.dir)
	}
}

// Listwatch is a `listwatch serve` process on a loopback port.
type Listwatch struct {
	URL string
	// Kubeconfig is the admin kubeconfig secure mode wrote (--secure
	// without TLS flags), else empty.
	Kubeconfig string
	cmd        *exec.Cmd
	logs       *syncBuffer
	done       chan struct{} // closed when the process has exited
}

// StartListwatch runs `bin serve` with args on a free loopback port and
// waits until it serves /readyz. The process is stopped with SIGTERM when t
// ends; its log is shown if t failed. Without --data-dir in args it gets a
// temporary one (the server keeps keys there whatever its store).
func StartListwatch(t testing.TB, bin string, args ...string) *Listwatch {
	t.Helper()
	if !slices.Contains(args, "--data-dir") {
		args = append(args, "--data-dir", t.TempDir())
	}
	var err error
	// A free port may be taken before the server listens on it: try again.
	for range 3 {
		var lw *Listwatch
		if lw, err = startListwatch(bin, args); err == nil {
			t.Cleanup(func() {
				if err := lw.Stop(); err != nil {
					t.Errorf("stopping listwatch: %v", err)
				}
				if t.Failed() {
					t.Logf("listwatch log:\n%s", lw.logs.String())
				}
			})
			return lw
		}
	}
	t.Fatalf("start listwatch: %v", err)
	return nil
}

func startListwatch(bin string, args []string) (*Listwatch, error) {
	ports, err := FreePorts(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	lw := &Listwatch{URL: "http://" + addr, logs: &syncBuffer{}, done: make(chan struct{})}
	lw.cmd = exec.Command(bin, append([]string{"serve", "--listen", addr}, args...)...)
	stderr, err := lw.cmd.StderrPipe()
	if err != nil {
		return nil, fmt.Errorf("stderr pipe: %w", err)
	}
	lw.cmd.Stdout = lw.logs
	if err := lw.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	serving := make(chan struct{})
	go lw.readLog(stderr, serving)
	if err := lw.waitServing(serving); err != nil {
		lw.Stop()
		return nil, fmt.Errorf("%w\n%s", err, lw.logs.String())
	}
	return lw, nil
}

// The log lines' attributes that readLog reads: where it serves (https
// in secure mode), and the admin kubeconfig secure mode wrote.
var (
	servingURL      = regexp.MustCompile(`listwatch serving url=(\S+)`)
	adminKubeconfig = regexp.MustCompile(`secure mode .*admin-kubeconfig=(\S+)`)
)

// readLog copies the server's log, notes the URL it serves and its admin
// kubeconfig, closes serving at the line that says it listens, and reaps
// the process at the end of its output.
func (lw *Listwatch) readLog(stderr io.Reader, serving chan struct{}) {
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		line := sc.Text()
		lw.logs.WriteString(line + "\n")
		if m := adminKubeconfig.FindStringSubmatch(line); m != nil && serving != nil {
			lw.Kubeconfig = m[1]
		}
		if m := servingURL.FindStringSubmatch(line); m != nil && serving != nil {
			lw.URL = m[1]
			close(serving)
			serving = nil
		}
	}
	lw.cmd.Wait()
	close(lw.done)
}

// waitServing waits for the "serving" log line (it listens from then on),
// then checks /readyz.
func (lw *Listwatch) waitServing(serving <-chan struct{}) error {
	select {
	case <-serving:
	case <-lw.done:
		return fmt.Errorf("listwatch exited before serving")
	case <-time.After(binStartTimeout):
		return fmt.Errorf("listwatch not serving after %v", binStartTimeout)
	}
	ctx, cancel := context.WithTimeout(context.Background(), binStartTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, lw.URL+"/readyz", nil)
	if err != nil {
		return err
	}
	// Readiness only: the server's certificate is the test's to check,
	// unless secure mode wrote the kubeconfig to check it with.
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	defer hc.CloseIdleConnections()
	if lw.Kubeconfig != "" {
		if hc, err = kubeconfigClient(lw.Kubeconfig); err != nil {
			return err
		}
	}
	resp, err := hc.Do(req)
	if err != nil {
		return fmt.Errorf("GET /readyz: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /readyz: %s", resp.Status)
	}
	return nil
}

// kubeconfigClient is client-go's HTTP client with the TLS settings and
// credentials of a kubeconfig file.
func kubeconfigClient(path string) (*http.Client, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, err
	}
	return rest.HTTPClientFor(cfg)
}

// Stop sends SIGTERM and waits for the process to exit (SIGKILL after
// binStopTimeout). Stopping a stopped server does nothing.
func (lw *Listwatch) Stop() error {
	select {
	case <-lw.done:
		return nil
	default:
	}
	if err := lw.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return fmt.Errorf("SIGTERM: %w", err)
	}
	select {
	case <-lw.done:
		if st := lw.cmd.ProcessState; st != nil && !st.Success() {
			return fmt.Errorf("listwatch exited with %v", st)
		}
		return nil
	case <-time.After(binStopTimeout):
		lw.cmd.Process.Kill()
		<-lw.done
		return fmt.Errorf("listwatch did not stop within %v of SIGTERM", binStopTimeout)
	}
}

// Kill ends the process with SIGKILL, as a crash would, and waits for its
// end: its connections are closed by the kernel, with nothing flushed.
func (lw *Listwatch) Kill() error {
	if err := lw.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("SIGKILL: %w", err)
	}
	<-lw.done
	return nil
}

// syncBuffer is a bytes.Buffer safe for one writer and concurrent readers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) WriteString(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.WriteString(s)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
