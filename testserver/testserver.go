// Package testserver starts a listwatch server inside a test process, as
// controller-runtime's envtest starts kube-apiserver and etcd for
// controller tests, but in milliseconds and with kube-controller-manager's
// garbage collection and namespace deletion running.
//
// A server listens on a loopback port of its own, keeps its objects in an
// embedded store in a directory of its own (a temporary one unless
// Options.Dir is given), installs the CustomResourceDefinitions of
// Options.CRDDirectoryPaths and waits until each is Established and
// served, and hands out a kubeconfig (Server.Kubeconfig, written to
// Server.KubeconfigPath) that client-go, controller-runtime
// (clientcmd.RESTConfigFromKubeConfig), kubectl and this module's client
// (Server.ClientConfig) accept.
//
// By default the server is anonymous, as `listwatch serve` on loopback:
// plain HTTP, every request allowed. Options.Secure serves HTTPS instead,
// on certificates made for the server, authenticates only the client
// certificate of the kubeconfig's user, system:admin in system:masters,
// and authorizes the users it impersonates by RBAC.
//
// Every server of a process starts on a copy of the store the first one
// made (storeTemplate): the initial namespaces, kube's default RBAC policy,
// the default service accounts and the controller Lease (released) are
// there from the start, with the same UIDs in every server. Secure
// servers likewise share one PKI (pkiTemplate): the same CAs, admin and
// serving certificates.
//
// # Concurrency
//
// Servers share no state: a test binary may run many at once (each with
// its own store, metrics registry and logger), and tests calling New may
// run in parallel. Stop may be called from any goroutine, more than once.
package testserver

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/h2"
	"github.com/listwatch/listwatch/internal/metrics"
	"github.com/listwatch/listwatch/internal/pki"
	"github.com/listwatch/listwatch/internal/server"
	"github.com/listwatch/listwatch/internal/server/authn"
	"github.com/listwatch/listwatch/internal/server/authz"
	"github.com/listwatch/listwatch/internal/server/gc"
	"github.com/listwatch/listwatch/internal/server/rbac"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/internal/watchstream"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/bolt"
)

// Options configure a server. The zero value is an anonymous server on a
// temporary store with no CustomResourceDefinitions.
type Options struct {
	// Dir holds the store, the kubeconfig and, with Secure, the
	// certificates; "" means a new temporary directory that Stop removes.
	// A directory given is kept, so that a later server can reopen its
	// store (one server at a time).
	Dir string
	// CRDDirectoryPaths are files and directories of
	// CustomResourceDefinitions to install, as envtest's: a directory's
	// .json, .yaml and .yml files (not its subdirectories), in name order,
	// and each file given (whatever its name), each of one or more YAML or
	// JSON documents. Documents of other kinds are skipped; a definition
	// that is not apiextensions.k8s.io/v1, or that the server refuses, is
	// an error naming its file (envtest skips one without a group or kind).
	// A definition already in a reopened store (Dir) is replaced.
	CRDDirectoryPaths []string
	// ErrorIfCRDPathMissing makes a path of CRDDirectoryPaths that does not
	// exist an error; otherwise it is skipped, as in envtest.
	ErrorIfCRDPathMissing bool
	// CRDInstallTimeout bounds the wait for the definitions to be served;
	// 0 means 10 s, envtest's CRDInstallOptions.MaxTime.
	CRDInstallTimeout time.Duration
	// Secure serves HTTPS, authenticates the kubeconfig's client
	// certificate (system:admin, group system:masters) and nothing else,
	// and authorizes by RBAC, as `listwatch serve --secure`: the admin may
	// do anything, including impersonate users whose roles a test checks.
	Secure bool
	// Logger receives the server's log (errors, the access log); nil
	// discards it.
	Logger *slog.Logger
}

// defaultCRDInstallTimeout is envtest's default CRDInstallOptions.MaxTime.
const defaultCRDInstallTimeout = 10 * time.Second

// testNamespaceGrace is how long namespace deletion waits after a
// namespace's change (Config.NamespaceDeletionGracePeriod).
const testNamespaceGrace = 100 * time.Millisecond

// KubeconfigFile is the kubeconfig's name in the server's directory.
const KubeconfigFile = "kubeconfig"

// Server is a running server. Its fields are set by Start and must not be
// changed.
type Server struct {
	// URL is the server's base URL: http://127.0.0.1:PORT, or https:// with
	// Options.Secure.
	URL string
	// Kubeconfig reaches the server as its admin (anonymously unless
	// Secure), with its one context current; KubeconfigPath is the file
	// that holds it.
	Kubeconfig     []byte
	KubeconfigPath string
	// CRDs are the installed CustomResourceDefinitions as the server
	// answered their creation, in the order of the files.
	CRDs []api.Object

	dir     string
	tempDir bool
	pki     *pki.PKI   // nil unless Secure
	rbac    *rbac.View // nil unless Secure
	srv     *server.Server
	store   *bolt.Store
	http    *http.Server
	unused  *server.UnusedConns // closed at Stop, not waited for
	serving sync.WaitGroup      // the http.Server's Serve

	stopOnce sync.Once
	stopErr  error
}

// New starts a server for tb and stops it when tb's test ends, failing tb
// if it cannot start.
func New(tb testing.TB, opts Options) *Server {
	tb.Helper()
	s, err := Start(tb.Context(), opts)
	if err != nil {
		tb.Fatalf("testserver: %v", err)
	}
	tb.Cleanup(func() {
		if err := s.Stop(); err != nil {
			tb.Errorf("testserver: %v", err)
		}
	})
	return s
}

// Start starts a server; ctx bounds the start (not the server's life,
// which lasts until Stop).
func Start(ctx context.Context, opts Options) (_ *Server, err error) {
	s := &Server{dir: opts.Dir}
	if s.dir == "" {
		if s.dir, err = os.MkdirTemp("", "listwatch-testserver-"); err != nil {
			return nil, err
		}
		s.tempDir = true
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()
	if err := s.start(ctx, opts); err != nil {
		return nil, err
	}
	if err := s.installCRDs(ctx, opts); err != nil {
		return nil, err
	}
	return s, nil
}

// start opens the store and serves it on a loopback port.
func (s *Server) start(ctx context.Context, opts Options) error {
	if err := copyTemplate(s.dir); err != nil {
		return err
	}
	m := metrics.New()
	store, err := bolt.Open(s.dir, bolt.Options{
		// A test's store outlives no crash: fsyncs would only slow it.
		NoSync: true, CommitObserver: m.Commits(),
	})
	if err != nil {
		return fmt.Errorf("opening the store in %s: %w", s.dir, err)
	}
	s.store = store
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg := server.Config{
		Storage: store, Metrics: m, Logger: log, LoopbackOnly: !opts.Secure,
		ConcurrentGCSyncs: gc.DefaultWorkers,
		// One server, which checks a create's namespace right before the
		// write: kube's 5 s wait, for HA apiservers' caches, would only
		// slow the tests that delete namespaces.
		NamespaceDeletionGracePeriod: testNamespaceGrace,
	}
	var clientCAs *x509.CertPool
	if opts.Secure {
		if s.pki, err = ensurePKI(filepath.Join(s.dir, "pki")); err != nil {
			return err
		}
		if clientCAs, err = authn.LoadClientCA(s.pki.Path(pki.ClientCAFile)); err != nil {
			return err
		}
		cfg.Authenticator = authn.AuthenticatedGroup{Authenticator: authn.ClientCert{Roots: clientCAs}}
		if err := s.authorizeRBAC(ctx, &cfg); err != nil {
			return err
		}
	}
	if s.srv, err = server.New(ctx, cfg); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	s.http = httpServer(s.srv.Handler(), log)
	s.unused = server.NewUnusedConns()
	s.http.ConnState = s.unused.Track
	s.URL = "http://" + ln.Addr().String()
	serve := func() error { return s.http.Serve(ln) }
	if s.pki != nil {
		// As `listwatch serve`: TLS watches over HTTP/1.1 are detached too.
		ln = watchstream.Listener(ln)
		s.http.ConnContext = watchstream.ConnContext
		s.http.TLSConfig.GetCertificate = s.pki.Serving.GetCertificate
		s.http.TLSConfig.ClientAuth, s.http.TLSConfig.ClientCAs = tls.RequestClientCert, clientCAs
		s.URL = "https://" + ln.Addr().String()
		serve = func() error { return s.http.ServeTLS(ln, "", "") }
	}
	s.serving.Go(func() {
		if err := serve(); !errors.Is(err, http.ErrServerClosed) {
			log.Error("testserver: serving", "err", err)
		}
	})
	return s.writeKubeconfig()
}

// authorizeRBAC authorizes cfg's requests as `listwatch serve` does
// with authentication: system:masters (the admin) may do anything, other
// users (whom the admin impersonates) what RBAC allows them.
func (s *Server) authorizeRBAC(ctx context.Context, cfg *server.Config) error {
	view, err := rbac.Start(ctx, cfg.Storage, resource.Builtins(), cfg.Logger)
	if err != nil {
		return err
	}
	s.rbac = view
	z := rbac.NewAuthorizer(view)
	cfg.Authorizer, cfg.RuleResolver = authz.Union{rbac.Privileged{}, z}, z
	cfg.WriteHook = rbac.NewGuard(view, cfg.Authorizer)
	return nil
}

// httpServer serves HTTP/1.1 and HTTP/2 (TLS ALPN or h2c prior
// knowledge) as `listwatch serve` does, HTTP/2 by internal/h2, whose
// watches are detached as HTTP/1.1 ones are.
func httpServer(h http.Handler, log *slog.Logger) *http.Server {
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(true)
	hs := &http.Server{
		Handler: h, Protocols: &protocols, ReadHeaderTimeout: 30 * time.Second,
		TLSConfig: &tls.Config{MinVersion: tls.VersionTLS12},
		ErrorLog:  slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	(&h2.Server{Logger: log}).Configure(hs)
	return hs
}

// writeKubeconfig writes the kubeconfig of the server's admin and keeps
// its bytes.
func (s *Server) writeKubeconfig() error {
	s.KubeconfigPath = filepath.Join(s.dir, KubeconfigFile)
	s.Kubeconfig = anonymousKubeconfig(s.URL)
	if s.pki != nil {
		var err error
		if s.Kubeconfig, err = s.pki.Kubeconfig(s.URL); err != nil {
			return err
		}
	}
	return os.WriteFile(s.KubeconfigPath, s.Kubeconfig, 0o600)
}

// anonymousKubeconfig reaches url without credentials. kubectl and
// client-go need a user entry, even an empty one.
func anonymousKubeconfig(url string) []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: testserver
  cluster:
    server: %s
users:
- name: testserver
  user: {}
contexts:
- name: testserver
  context:
    cluster: testserver
    user: testserver
current-context: testserver
`, url)
}

// ClientConfig is the configuration of this module's client for the
// server, equal to what Kubeconfig loads to.
func (s *Server) ClientConfig() *client.Config {
	cfg := &client.Config{Host: s.URL}
	if s.pki != nil {
		cfg.TLS = client.TLSConfig{CAData: s.pki.ServerCA, CertData: s.pki.AdminCert, KeyData: s.pki.AdminKey}
	}
	return cfg
}

// stopGrace bounds how long Stop waits for requests in flight; watches
// end at once.
const stopGrace = 5 * time.Second

// Stop ends every watch, waits for requests in flight, closes the store
// and removes the temporary directory. It returns the first call's error
// to every call.
func (s *Server) Stop() error {
	s.stopOnce.Do(func() { s.stopErr = s.stop() })
	return s.stopErr
}

func (s *Server) stop() error {
	var errs []error
	if s.srv != nil {
		s.srv.Close() // watches end; Shutdown then waits for the rest
	}
	if s.http != nil {
		ctx, cancel := context.WithTimeout(context.Background(), stopGrace)
		defer cancel()
		s.unused.Close()
		errs = append(errs, s.http.Shutdown(ctx))
		s.serving.Wait()
	}
	if s.rbac != nil {
		s.rbac.Close()
	}
	if s.store != nil {
		errs = append(errs, s.store.Close())
	}
	if s.tempDir {
		errs = append(errs, os.RemoveAll(s.dir))
	}
	return errors.Join(errs...)
}

// storeTemplate is the file of a store as a server leaves it after its
// first start (the initial namespaces, kube's default RBAC policy, the
// default service accounts, the controller Lease), made once per process:
// a server that starts on a copy finds them there and writes nothing but
// its Lease, which is a third of a start's CPU time (kube's policy alone
// is over a hundred objects).
var storeTemplate = sync.OnceValues(makeStoreTemplate)

// makeStoreTemplate starts a server on a new store, waits until it leads
// the controller election, stops it (releasing the Lease) and returns the
// store's file. The wait makes the template the same at every run: a
// server stopped at once had, or had not yet, made the Lease.
func makeStoreTemplate() (*sparseFile, error) {
	dir, err := os.MkdirTemp("", "listwatch-testserver-template-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	store, err := bolt.Open(dir, bolt.Options{NoSync: true})
	if err != nil {
		return nil, err
	}
	srv, err := server.New(context.Background(), server.Config{Storage: store, Logger: slog.New(slog.DiscardHandler)})
	if err == nil {
		err = waitLeading(store)
		srv.Close()
	}
	if err = errors.Join(err, store.Close()); err != nil {
		return nil, fmt.Errorf("making the store template: %w", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, bolt.FileName))
	if err != nil {
		return nil, err
	}
	return newSparseFile(data), nil
}

// leaseWait bounds the template server's wait for the controller Lease,
// which a lone server takes as it starts.
const leaseWait = 30 * time.Second

// waitLeading waits until a server on store holds the controller Lease.
func waitLeading(store storage.Interface) error {
	ctx, cancel := context.WithTimeout(context.Background(), leaseWait)
	defer cancel()
	var leases *resource.Resource
	for _, r := range resource.Builtins() {
		if r.Group == "coordination.k8s.io" && r.Plural == "leases" {
			leases = r
		}
	}
	key := leases.Key("kube-system", server.ControllerLease)
	held := func(value []byte) bool {
		lease, err := api.ParseObject(value)
		spec, _ := lease["spec"].(map[string]any)
		return err == nil && spec["holderIdentity"] != nil && spec["holderIdentity"] != ""
	}
	rev, err := store.CurrentRevision(ctx)
	if err != nil {
		return err
	}
	if kv, err := store.Get(ctx, key); err == nil && held(kv.Value) {
		return nil
	}
	w, err := store.Watch(ctx, key, rev) // from before the Get: nothing missed
	if err != nil {
		return err
	}
	for batch := range w.Events() {
		for _, ev := range batch {
			if ev.KV.Key == key && held(ev.KV.Value) {
				return nil
			}
		}
	}
	return fmt.Errorf("the controller Lease is not held after %v: %w", leaseWait, w.Err())
}

// copyTemplate writes storeTemplate into dir unless dir holds a store.
func copyTemplate(dir string) error {
	path := filepath.Join(dir, bolt.FileName)
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return err
	}
	t, err := storeTemplate()
	if err != nil {
		return err
	}
	return t.write(path)
}

// pkiNames are the names the serving certificate is for: the loopback
// addresses the server is reached by.
var pkiNames = []string{"localhost", "127.0.0.1"}

// pkiTemplate is the files of a PKI (its CAs, serving and admin
// certificates and keys), made once per process: pki.Ensure writes each
// with an fsync, tens of milliseconds on a busy disk, and a secure server
// starts on a copy (written without fsync, like its store).
var pkiTemplate = sync.OnceValues(func() (map[string]*sparseFile, error) {
	dir, err := os.MkdirTemp("", "listwatch-testserver-pki-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if _, err := pki.Ensure(pki.Config{Dir: dir, Names: pkiNames}); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	files := map[string]*sparseFile{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		files[e.Name()] = newSparseFile(data)
	}
	return files, nil
})

// ensurePKI loads the PKI of dir, copying pkiTemplate there first when dir
// does not exist.
func ensurePKI(dir string) (*pki.PKI, error) {
	if err := os.Mkdir(dir, 0o700); err == nil {
		files, err := pkiTemplate()
		if err != nil {
			return nil, err
		}
		for name, f := range files {
			if err := f.write(filepath.Join(dir, name)); err != nil {
				return nil, err
			}
		}
	} else if !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return pki.Ensure(pki.Config{Dir: dir, Names: pkiNames})
}

// sparseFile is a file's non-zero blocks. bbolt grows its file 16 MiB at a
// time: the template's 17 MB hold a few hundred KB of pages, and writing
// the rest as a hole costs nothing.
type sparseFile struct {
	size   int64
	blocks map[int64][]byte // by offset
}

// sparseBlock is the size of the blocks sparseFile keeps or leaves out:
// the store's page size.
const sparseBlock = 16 << 10

func newSparseFile(data []byte) *sparseFile {
	f := &sparseFile{size: int64(len(data)), blocks: map[int64][]byte{}}
	for off := 0; off < len(data); off += sparseBlock {
		b := data[off:min(off+sparseBlock, len(data))]
		if slices.ContainsFunc(b, func(c byte) bool { return c != 0 }) {
			f.blocks[int64(off)] = b
		}
	}
	return f
}

// write creates path, 0600, with f's content.
func (f *sparseFile) write(path string) error {
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	errs := []error{out.Truncate(f.size)}
	for off, b := range f.blocks {
		_, err := out.WriteAt(b, off)
		errs = append(errs, err)
	}
	return errors.Join(append(errs, out.Close())...)
}
