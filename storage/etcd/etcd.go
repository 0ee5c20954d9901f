package etcd

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"go.etcd.io/etcd/client/pkg/v3/transport"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/listwatch/listwatch/storage"
)

// Defaults applied by New and NewFromClient to zero Config fields.
const (
	DefaultPrefix      = "/listwatch"
	DefaultDialTimeout = 5 * time.Second
	// DefaultWatchBacklog is how many events a watch queues for a slow reader
	// before it pauses its etcd watch: a burst of a thousand writes passes
	// without a pause, and a thousand stalled watchers hold about a million
	// events at most.
	DefaultWatchBacklog = 1024
)

// Config says how to reach etcd and where the store's keys live.
type Config struct {
	// Endpoints are the cluster's client URLs, e.g. "https://10.0.0.1:2379".
	Endpoints []string
	// Prefix is prepended to every key; default DefaultPrefix. A trailing "/"
	// is dropped, since keys start with "/".
	Prefix string
	// TLS, when any of its files is set, makes the client use TLS.
	TLS TLSConfig
	// DialTimeout bounds New's first request to the cluster; default DefaultDialTimeout.
	DialTimeout time.Duration
	// WatchBacklog is how many events a watch queues for its reader before it
	// pauses its etcd watch (see the package documentation); default
	// DefaultWatchBacklog.
	WatchBacklog int
}

// TLSConfig names the PEM files of a TLS client.
type TLSConfig struct {
	CAFile   string // the cluster's CA; empty: the system roots
	CertFile string // client certificate, for mutual TLS
	KeyFile  string // the client certificate's key
}

// config returns the *tls.Config the files describe, or nil if none is set.
func (c TLSConfig) config() (*tls.Config, error) {
	if c == (TLSConfig{}) {
		return nil, nil
	}
	info := transport.TLSInfo{TrustedCAFile: c.CAFile, CertFile: c.CertFile, KeyFile: c.KeyFile}
	cfg, err := info.ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("etcd: TLS: %w", err)
	}
	return cfg, nil
}

// Store is a storage.Interface on an etcd cluster.
type Store struct {
	cli          *clientv3.Client
	ownsClient   bool // New created cli, so Close closes it
	prefix       string
	watchBacklog int

	// closed is done once Close starts; it ends every watch.
	closed context.Context
	close  context.CancelFunc

	mu       sync.Mutex     // guards isClosed and the Add calls of watches
	isClosed bool           // set by Close before it waits for watches
	watches  sync.WaitGroup // one per running watch goroutine
}

var _ storage.Interface = (*Store)(nil)

// New connects to the cluster cfg describes and checks that it answers
// within cfg.DialTimeout. Close closes the connection.
func New(cfg Config) (*Store, error) {
	cfg = cfg.withDefaults()
	tlsCfg, err := cfg.TLS.config()
	if err != nil {
		return nil, err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, TLS: tlsCfg, DialTimeout: cfg.DialTimeout})
	if err != nil {
		return nil, fmt.Errorf("etcd: connect to %v: %w", cfg.Endpoints, err)
	}
	s := newStore(cli, true, cfg)
	ctx, cancel := context.WithTimeout(context.Background(), cfg.DialTimeout)
	defer cancel()
	if _, err := s.CurrentRevision(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("etcd: connect to %v: %w", cfg.Endpoints, err)
	}
	return s, nil
}

// NewFromClient returns a store on an existing client, with keys under
// prefix (DefaultPrefix if empty). Close leaves the client open.
func NewFromClient(cli *clientv3.Client, prefix string) *Store {
	return newStore(cli, false, Config{Prefix: prefix}.withDefaults())
}

func (c Config) withDefaults() Config {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	c.Prefix = strings.TrimRight(c.Prefix, "/")
	if c.DialTimeout <= 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.WatchBacklog <= 0 {
		c.WatchBacklog = DefaultWatchBacklog
	}
	return c
}

func newStore(cli *clientv3.Client, owns bool, cfg Config) *Store {
	closed, cancel := context.WithCancel(context.Background())
	return &Store{
		cli:          cli,
		ownsClient:   owns,
		prefix:       cfg.Prefix,
		watchBacklog: cfg.WatchBacklog,
		closed:       closed,
		close:        cancel,
	}
}

// Close ends every watch with storage.ErrClosed, waits for their goroutines
// and closes the client if New opened it. Later calls return nil.
func (s *Store) Close() error {
	s.mu.Lock()
	if s.isClosed {
		s.mu.Unlock()
		return nil
	}
	s.isClosed = true
	s.close()
	s.mu.Unlock()
	s.watches.Wait()
	if !s.ownsClient {
		return nil
	}
	if err := s.cli.Close(); err != nil && !errors.Is(err, context.Canceled) {
		return fmt.Errorf("etcd: close client: %w", err)
	}
	return nil
}

// startWatch counts a watch goroutine about to start, unless the store is closed.
func (s *Store) startWatch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.isClosed {
		return storage.ErrClosed
	}
	s.watches.Add(1)
	return nil
}

// checkOpen returns storage.ErrClosed once Close has started.
func (s *Store) checkOpen() error {
	if s.closed.Err() != nil {
		return storage.ErrClosed
	}
	return nil
}

// mapErr translates an error of the etcd client into the contract's.
func (s *Store) mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case s.closed.Err() != nil:
		return storage.ErrClosed
	case errors.Is(err, rpctypes.ErrCompacted):
		return fmt.Errorf("%w: %v", storage.ErrCompacted, err)
	case errors.Is(err, rpctypes.ErrFutureRev):
		return fmt.Errorf("%w: %v", storage.ErrFutureRevision, err)
	case errors.Is(err, rpctypes.ErrRequestTooLarge):
		// The cluster's --max-request-bytes is below the value plus its key.
		return fmt.Errorf("%w: %v", storage.ErrValueTooLarge, err)
	}
	return err
}

// key returns the etcd key of a store key.
func (s *Store) key(key string) string { return s.prefix + key }

// kv converts an etcd KeyValue under the prefix into a store KV.
func (s *Store) kv(kv *mvccpb.KeyValue) storage.KV {
	return storage.KV{
		Key:            string(kv.Key[len(s.prefix):]),
		Value:          kv.Value,
		CreateRevision: kv.CreateRevision,
		ModRevision:    kv.ModRevision,
	}
}
