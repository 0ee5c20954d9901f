package e2e

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/listwatch/listwatch/client"
)

// The writers' load: a few goroutines doing random creates, merge patches
// and deletes on a small set of keys, so that the same key is often
// written by several of them at once, at writerQPS requests a second
// between them (so that a run's writes do not depend on the machine's
// speed). Every writer stops after maxWritesPerWriter requests whatever
// happens: over a minute of writing.
const (
	writerCount        = 4
	writerKeys         = 24
	writerQPS          = 300
	maxWritesPerWriter = 5000
)

// writers write to the server directly (not through the proxy) until
// stopped.
type writers struct {
	cms    *client.Resource[*configMap]
	gate   sync.RWMutex // each request holds it for reading; pause takes it
	done   atomic.Int64 // requests that changed something
	cancel context.CancelFunc
	wg     sync.WaitGroup
	once   sync.Once

	mu   sync.Mutex
	errs []error // unexpected failures; guarded by mu
}

// startWriters starts the writers on the server at url; they stop when
// the test ends, if not before.
func startWriters(t *testing.T, url string) *writers {
	t.Helper()
	cfg := client.ConfigForURL(url)
	cfg.QPS, cfg.Burst = writerQPS, writerCount
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	ctx, cancel := context.WithCancel(context.Background())
	w := &writers{cms: client.NewResource[*configMap](c, configMaps, "default"), cancel: cancel}
	for id := range writerCount {
		w.wg.Go(func() { w.run(ctx, id) })
	}
	t.Cleanup(w.stop)
	return w
}

func (w *writers) run(ctx context.Context, id int) {
	for n := 0; n < maxWritesPerWriter && ctx.Err() == nil; n++ {
		w.gate.RLock()
		changed, err := w.write(ctx, fmt.Sprintf("w%d-%d", id, n))
		w.gate.RUnlock()
		if changed {
			w.done.Add(1)
		}
		if err != nil && ctx.Err() == nil {
			w.fail(err)
		}
	}
}

// write creates, patches or deletes a random key. Losing a race to another
// writer (exists, not found, conflict) is no error.
func (w *writers) write(ctx context.Context, value string) (changed bool, err error) {
	name := fmt.Sprintf("cm-%02d", rand.IntN(writerKeys))
	switch rand.IntN(3) {
	case 0:
		_, err = w.cms.Create(ctx, newConfigMap(name, map[string]string{"v": value}), client.WriteOptions{})
	case 1:
		patch := fmt.Appendf(nil, `{"data":{"v":%q}}`, value)
		_, err = w.cms.Patch(ctx, name, client.MergePatchType, patch, client.PatchOptions{})
	default:
		err = w.cms.Delete(ctx, name, client.DeleteOptions{})
	}
	if client.IsAlreadyExists(err) || client.IsNotFound(err) || client.IsConflict(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("writing %s: %w", name, err)
	}
	return true, nil
}

func (w *writers) fail(err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.errs = append(w.errs, err)
}

// Err returns the writers' unexpected failures.
func (w *writers) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return errors.Join(w.errs...)
}

// Writes returns how many writes have changed something so far.
func (w *writers) Writes() int64 { return w.done.Load() }

// pause waits for the requests in flight and holds back new ones until
// resume: for a server restart.
func (w *writers) pause() { w.gate.Lock() }

func (w *writers) resume() { w.gate.Unlock() }

// stop ends the writers and waits for them (idempotent).
func (w *writers) stop() {
	w.once.Do(func() {
		w.cancel()
		w.wg.Wait()
	})
}
