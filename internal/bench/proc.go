package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process says where a target serves and which process to account (pid 0:
// none known).
type Process struct {
	URL string
	PID int
	// Token is the bearer token every request sends, if any (a server
	// given by --server that authenticates).
	Token string
	tls   *tls.Config // how to reach a started child's https URL
}

// authorization is the header line that sends token, if any, for the
// requests written by hand.
func authorization(token string) string {
	if token == "" {
		return ""
	}
	return "Authorization: Bearer " + token + "\r\n"
}

// clientTLS is how clients reach p over TLS: the certificate a started
// child serves; for an https URL given to the bench, the operator's own
// server on a trusted network, any certificate (a benchmark measures, it
// does not authenticate); nil for http.
func (p Process) clientTLS() *tls.Config {
	if p.tls != nil || !isHTTPS(p.URL) {
		return p.tls
	}
	return &tls.Config{InsecureSkipVerify: true} //nolint:gosec // see above: the target is the operator's own
}

// child is a process this package started: a server or a bare socket server.
type child struct {
	cmd  *exec.Cmd
	dir  string // temporary: the server's data and the child's log
	log  string
	done chan struct{} // closed when the process has exited
}

// childStopGrace is how long a child has to exit on SIGTERM (and write its
// CPU profile) before SIGKILL.
const childStopGrace = 15 * time.Second

// readyTimeout bounds a child's start.
const readyTimeout = 30 * time.Second

// startChild runs binary with the args argsIn gives for a new temporary
// directory, its output going to a log there. The child gets SIGKILL if this
// process dies first. stdin, if not nil, becomes the child's input.
func startChild(binary string, env []string, stdin io.Reader, argsIn func(dir string) []string) (*child, error) {
	dir, err := os.MkdirTemp("", "listwatch-bench-")
	if err != nil {
		return nil, fmt.Errorf("creating a temporary directory: %w", err)
	}
	ch := &child{dir: dir, log: filepath.Join(dir, "child.log"), done: make(chan struct{})}
	logf, err := os.Create(ch.log)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("creating the child's log: %w", err)
	}
	defer logf.Close()
	ch.cmd = exec.Command(binary, argsIn(dir)...)
	ch.cmd.Env = append(os.Environ(), env...)
	ch.cmd.Stdin, ch.cmd.Stdout, ch.cmd.Stderr = stdin, logf, logf
	ch.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := ch.cmd.Start(); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("starting %s: %w", binary, err)
	}
	go func() { _ = ch.cmd.Wait(); close(ch.done) }()
	return ch, nil
}

func (ch *child) pid() int { return ch.cmd.Process.Pid }

// stop ends the child (SIGTERM, SIGKILL after childStopGrace), waits for
// it and removes its temporary directory.
func (ch *child) stop() {
	_ = ch.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-ch.done:
	case <-time.After(childStopGrace):
		_ = ch.cmd.Process.Kill()
		<-ch.done
	}
	os.RemoveAll(ch.dir)
}

// failure adds the tail of the child's log to err.
func (ch *child) failure(err error) error {
	b, _ := os.ReadFile(ch.log)
	if len(b) > 2048 {
		b = b[len(b)-2048:]
	}
	return fmt.Errorf("%w; child log:\n%s", err, b)
}

// ServerOptions say how to start a listwatch server child.
type ServerOptions struct {
	// Binary is the listwatch executable.
	Binary string
	// Env is added to the child's environment.
	Env []string
	// Args are added to `serve`'s flags.
	Args []string
}

// startServer starts `listwatch serve` on a free loopback port with a fresh
// data directory, serving cert over TLS unless it is nil, and waits for
// /readyz.
func startServer(ctx context.Context, o ServerOptions, cert *certificate) (*child, Process, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, Process{}, err
	}
	args := o.Args
	p := Process{URL: "http://" + addr}
	if cert != nil {
		args = append(cert.args(), args...)
		p.URL, p.tls = "https://"+addr, cert.client
	}
	ch, err := startChild(o.Binary, o.Env, nil, func(dir string) []string {
		return append([]string{"serve", "--listen", addr, "--data-dir", filepath.Join(dir, "data")}, args...)
	})
	if err != nil {
		return nil, Process{}, err
	}
	p.PID = ch.pid()
	if err := ch.waitReady(ctx, p.tls, p.URL+"/readyz"); err != nil {
		err = ch.failure(err)
		ch.stop()
		return nil, Process{}, err
	}
	return ch, p, nil
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// waitReady polls url (over TLS with tc, if not nil) until it answers
// 200, the child exits or readyTimeout passes.
func (ch *child) waitReady(ctx context.Context, tc *tls.Config, url string) error {
	ctx, cancel := context.WithTimeout(ctx, readyTimeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	hc := http.DefaultClient
	if tc != nil {
		tr := &http.Transport{TLSClientConfig: tc}
		defer tr.CloseIdleConnections()
		hc = &http.Client{Transport: tr}
	}
	for {
		if ok := probe(ctx, hc, url); ok {
			return nil
		}
		select {
		case <-ch.done:
			return errors.New("the server exited before it was ready")
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}

func probe(ctx context.Context, hc *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// Usage is a process's CPU time and memory at one moment.
type Usage struct {
	CPU time.Duration // user + system
	RSS int64         // VmRSS, bytes
	HWM int64         // VmHWM (peak RSS), bytes
}

// userHZ is the unit of /proc/<pid>/stat's times.
const userHZ = 100

// ReadUsage reads pid's CPU time and memory from /proc; pid 0 gives zero.
func ReadUsage(pid int) (Usage, error) {
	if pid == 0 {
		return Usage{}, nil
	}
	cpu, err := readCPU(pid)
	if err != nil {
		return Usage{}, err
	}
	u := Usage{CPU: cpu}
	u.RSS, u.HWM, err = readMemory(pid)
	return u, err
}

// readCPU is utime+stime of /proc/<pid>/stat (fields 14 and 15).
func readCPU(pid int) (time.Duration, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading CPU time: %w", err)
	}
	i := bytes.LastIndexByte(b, ')') // the command name may hold anything
	if i < 0 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %q", pid, b)
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3, state
	if len(f) < 13 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %q", pid, b)
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}

// readMemory is VmRSS and VmHWM of /proc/<pid>/status, in bytes.
func readMemory(pid int) (rss, hwm int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading memory use: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("parsing %s of /proc/%d/status: %w", k, pid, err)
		}
		if k == "VmRSS" {
			rss = kb << 10
		} else {
			hwm = kb << 10
		}
	}
	return rss, hwm, sc.Err()
}
