package bolt

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	bbolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"

	"github.com/listwatch/listwatch/storage"
)

// FileName is the name of the database file inside the data directory.
const FileName = "listwatch.db"

const (
	// defaultLockTimeout bounds the wait for the file lock: a second process
	// opening the same directory gets an error quickly instead of hanging.
	defaultLockTimeout = time.Second
	// defaultWatchBuffer is how many events a live watcher may have waiting
	// before it is moved to catching up from history: enough to absorb a few
	// group-commit batches of a busy store without costing much memory per
	// watcher (etcd's watch stream buffer is 1024 responses).
	defaultWatchBuffer = 4096
	// initialMmapSize is mapped at open so that a commit need not remap
	// (which waits for every read transaction, and blocks new ones meanwhile)
	// until the file outgrows it; Linux does not grow the file to match.
	// etcd maps 10 GiB.
	initialMmapSize = 1 << 30
	// pageSize is the page size of a new file (an existing file keeps its
	// own). bbolt writes every dirty page with its own pwrite and allocates
	// a node that outgrows a page but has too few keys to split as several
	// pages: with kube-sized objects (1-2 KiB) a 4 KiB leaf holds two or
	// three, and a commit of a batch of creates wrote ~3.5 pages per create.
	// 16 KiB pages hold ten or more, so a batch touches fewer, shallower
	// pages: `listwatch bench crud` measured ~15% less server CPU per create
	// than with 4 KiB (docs/PERFORMANCE.md), at the cost of writing a whole
	// 16 KiB page for a small change.
	pageSize = 16 << 10
	// fileMode and dirMode keep the data private to the server's user.
	fileMode = 0o600
	dirMode  = 0o700
)

// Options tune a Store. The zero value is the production setting.
type Options struct {
	// Timeout bounds the wait for the exclusive lock on the database file;
	// 0 means one second.
	Timeout time.Duration
	// NoSync skips fsync on commit. A crash may then lose acknowledged writes
	// or corrupt the file: for tests and benchmarks only.
	NoSync bool
	// WatchBuffer is the number of events a live watcher may have waiting
	// before it is switched to catching up from history; 0 means 4096.
	WatchBuffer int
	// CommitObserver, if not nil, is told of every commit.
	CommitObserver CommitObserver
}

// CommitObserver is told of the store's commits, for metrics. It is called
// by the committer (a writing caller or the writer goroutine, one at a
// time) after each commit and before the batch's callers are answered, so
// it must be quick and must not call the Store.
type CommitObserver interface {
	// Committed is called with the time bbolt's Tx.Commit took (spilling
	// the dirty nodes, writing the pages then the meta page, each write
	// followed by an fdatasync unless NoSync), whether it failed or not,
	// and the number of requests in the batch, those that failed their own
	// checks included.
	Committed(d time.Duration, batch int)
}

// Store is a storage.Interface kept in one bbolt file. See the package
// documentation.
//
// Lock order: closeMu (read side, held for the duration of a call) before
// compactMu before hub.mu; queueMu is never held while another is taken.
// The committer (a writing caller or the writer goroutine) takes hub.mu.
type Store struct {
	db          *bbolt.DB
	watchBuffer int
	observer    CommitObserver // nil: none; only the committer calls it

	// closeMu: every call holds the read side while it uses the database;
	// Close takes the write side once, after closing stop, to wait for the
	// calls in flight. It guards no field.
	closeMu sync.RWMutex
	// closing is set by the first Close.
	closing atomic.Bool
	// stop is closed by Close: new calls fail, watchers and compaction stop.
	stop chan struct{}

	// queueMu guards queue and committing.
	queueMu sync.Mutex
	// queue holds the write requests no commit has taken yet.
	queue []*request
	// committing is the committer's turn: set while a caller or the
	// writer goroutine commits. Whoever holds it is the only one to take
	// from queue, commit, and touch arena and rev; it ends the turn with
	// handOver.
	committing bool
	// kick gives the turn to the writer goroutine.
	kick chan struct{}
	// quit is closed by Close once no call can queue a request any more.
	quit chan struct{}
	// writerDone is closed when the writer goroutine has returned.
	writerDone chan struct{}
	// arena is the committer's buffer for the values of a batch (batchTx).
	arena []byte

	// commitBegun is set by the committer once its transaction's commit
	// has begun; failed, once a commit panicked after that (commit).
	commitBegun bool
	failed      atomic.Bool

	// rev is the revision of the latest committed write. Only the
	// committer stores it (and Open, before any write).
	rev atomic.Int64
	// compactMu serialises Compact calls.
	compactMu sync.Mutex
	// compacted mirrors the meta compaction revision; stored under compactMu.
	compacted atomic.Int64

	hub hub
	// watchers counts the watcher goroutines; Add is only called under
	// closeMu's read side, so Close's Wait sees them all.
	watchers sync.WaitGroup
}

var _ storage.Interface = (*Store)(nil)

// Open opens (creating if need be) the store in directory dir. It fails if
// another process holds the directory's database.
func Open(dir string, opts Options) (*Store, error) {
	if err := os.MkdirAll(dir, dirMode); err != nil {
		return nil, fmt.Errorf("bolt: create data directory: %w", err)
	}
	db, err := openDB(filepath.Join(dir, FileName), opts)
	if err != nil {
		return nil, err
	}
	s := &Store{
		db:          db,
		watchBuffer: opts.WatchBuffer,
		observer:    opts.CommitObserver,
		stop:        make(chan struct{}),
		kick:        make(chan struct{}, 1),
		quit:        make(chan struct{}),
		writerDone:  make(chan struct{}),
	}
	if s.watchBuffer <= 0 {
		s.watchBuffer = defaultWatchBuffer
	}
	if err := s.init(); err != nil {
		return nil, errors.Join(err, db.Close())
	}
	s.hub.init(s.rev.Load())
	go s.writer()
	return s, nil
}

func openDB(path string, opts Options) (*bbolt.DB, error) {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = defaultLockTimeout
	}
	db, err := bbolt.Open(path, fileMode, &bbolt.Options{
		Timeout:         timeout,
		NoSync:          opts.NoSync,
		NoFreelistSync:  true,
		FreelistType:    bbolt.FreelistMapType,
		InitialMmapSize: initialMmapSize,
		PageSize:        pageSize,
	})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("bolt: %s is in use by another process (lock not acquired within %v): %w", path, timeout, err)
	}
	if err != nil {
		return nil, fmt.Errorf("bolt: open %s: %w", path, err)
	}
	return db, nil
}

// init creates the buckets of a new file and loads the revisions.
func (s *Store) init() error {
	return s.db.Update(func(tx *bbolt.Tx) error {
		for _, name := range [][]byte{bucketKV, bucketHistory, bucketMeta} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return fmt.Errorf("bolt: create bucket %s: %w", name, err)
			}
		}
		rev, compacted, err := readMeta(tx)
		if err != nil {
			return err
		}
		s.rev.Store(rev)
		s.compacted.Store(compacted)
		return nil
	})
}

// readMeta returns the current and compaction revisions stored in tx.
func readMeta(tx *bbolt.Tx) (rev, compacted int64, err error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		return 0, 0, fmt.Errorf("%w: no meta bucket", errCorrupt)
	}
	for _, f := range []struct {
		key []byte
		dst *int64
	}{{metaRevision, &rev}, {metaCompacted, &compacted}} {
		if v := meta.Get(f.key); v != nil {
			if *f.dst, err = decodeRev(v); err != nil {
				return 0, 0, fmt.Errorf("meta %s: %w", f.key, err)
			}
		}
	}
	return rev, compacted, nil
}

// begin admits a call: it fails once Close has started. On success the caller
// must call s.end.
func (s *Store) begin(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.closeMu.RLock()
	select {
	case <-s.stop:
		s.closeMu.RUnlock()
		return storage.ErrClosed
	default:
	}
	if s.failed.Load() {
		s.closeMu.RUnlock()
		return errStoreFailed
	}
	return nil
}

func (s *Store) end() { s.closeMu.RUnlock() }

// view runs fn in a read transaction on behalf of a call.
func (s *Store) view(ctx context.Context, fn func(*bbolt.Tx) error) error {
	if err := s.begin(ctx); err != nil {
		return err
	}
	defer s.end()
	return s.db.View(fn)
}

// CurrentRevision returns the revision of the latest write.
func (s *Store) CurrentRevision(ctx context.Context) (int64, error) {
	if err := s.begin(ctx); err != nil {
		return 0, err
	}
	defer s.end()
	return s.rev.Load(), nil
}

// Get returns the current state of key.
func (s *Store) Get(ctx context.Context, key string) (storage.KV, error) {
	if err := storage.ValidateKey(key); err != nil {
		return storage.KV{}, err
	}
	var kv storage.KV
	err := s.view(ctx, func(tx *bbolt.Tx) error {
		v := tx.Bucket(bucketKV).Get([]byte(key))
		if v == nil {
			return fmt.Errorf("get %q: %w", key, storage.ErrNotFound)
		}
		var err error
		kv, err = decodeKV(key, v)
		return err
	})
	return kv, err
}

// Close ends every watch with storage.ErrClosed, waits for the calls in
// flight, and closes the file. Calls after Close fail with storage.ErrClosed.
func (s *Store) Close() error {
	if !s.closing.CompareAndSwap(false, true) {
		return storage.ErrClosed
	}
	close(s.stop)
	// Wait for every call that got past begin; none can start after this.
	s.closeMu.Lock()
	s.closeMu.Unlock()
	close(s.quit)
	<-s.writerDone
	s.watchers.Wait()
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("bolt: close: %w", err)
	}
	return nil
}
