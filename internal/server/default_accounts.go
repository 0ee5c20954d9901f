package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// defaultAccountName is the service account every namespace has.
const defaultAccountName = "default"

// ensureConcurrency bounds the namespaces whose accounts are ensured at
// once when the follower lists them all.
const ensureConcurrency = 16

// defaultAccountsRetry is how long the follower waits before listing again
// after its watches failed (the store unreachable, a revision compacted).
const defaultAccountsRetry = time.Second

// defaultAccounts keeps a `default` ServiceAccount in every namespace that
// is not being deleted, as kube-controller-manager's serviceaccounts
// controller: for every namespace at start, for each new one, and again
// when it is deleted. It follows the store itself, so the accounts of a
// namespace another server on the same store created are made too
// (creates are idempotent: every server may try).
type defaultAccounts struct {
	registry             *registry.Registry
	store                storage.Interface
	namespaces, accounts *resource.Resource
	log                  *slog.Logger

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startDefaultAccounts ensures the account of every namespace, so that a
// server serves them from its first request, then follows the store; close
// stops it.
func startDefaultAccounts(ctx context.Context, reg *registry.Registry, store storage.Interface, catalog *resource.Catalog, log *slog.Logger) (*defaultAccounts, error) {
	d := &defaultAccounts{registry: reg, store: store, log: log}
	d.namespaces, _ = catalog.Get("", "v1", "namespaces")
	d.accounts, _ = catalog.Get("", "v1", "serviceaccounts")
	rev, err := d.ensureAll(ctx)
	if err != nil {
		return nil, err
	}
	fctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	d.cancel = cancel
	d.wg.Go(func() { d.run(fctx, rev) })
	return d, nil
}

// close stops the follower and waits for it.
func (d *defaultAccounts) close() {
	d.cancel()
	d.wg.Wait()
}

// run follows namespaces and accounts from rev, and after a failed watch
// ensures every namespace's account again and follows on from there, until
// ctx ends or the store closes.
func (d *defaultAccounts) run(ctx context.Context, rev int64) {
	for {
		err := d.follow(ctx, rev)
		if ctx.Err() != nil || errors.Is(err, storage.ErrClosed) {
			return
		}
		d.log.Warn("following namespaces for their default service accounts; listing again", "err", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(defaultAccountsRetry):
		}
		if rev, err = d.ensureAll(ctx); err != nil {
			rev = 0 // the next round's follow fails at once, and lists again
		}
	}
}

// ensureAll ensures the account of every namespace listed and returns the
// revision of the list.
func (d *defaultAccounts) ensureAll(ctx context.Context) (int64, error) {
	opts := storage.ListOptions{Limit: 500}
	for {
		page, err := d.store.List(ctx, d.namespaces.KeyPrefix(""), opts)
		if err != nil {
			return 0, fmt.Errorf("listing namespaces: %w", err)
		}
		// Concurrently: on a fresh store the creates share group commits
		// (one fsync, not one each), as ensureNamespaces'.
		var wg sync.WaitGroup
		sem := make(chan struct{}, ensureConcurrency)
		for _, kv := range page.KVs {
			sem <- struct{}{}
			wg.Go(func() {
				defer func() { <-sem }()
				d.ensureIfActive(ctx, kv)
			})
		}
		wg.Wait()
		if page.Continue == "" {
			return page.Revision, nil
		}
		opts.Continue = page.Continue
	}
}

// follow ensures the account of each namespace created or changed, and of
// the namespace of each default account deleted, until a watch ends.
func (d *defaultAccounts) follow(ctx context.Context, rev int64) error {
	if rev == 0 {
		return errors.New("no revision to watch from")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // ends the other watch when one fails
	nsW, err := d.store.Watch(ctx, d.namespaces.KeyPrefix(""), rev)
	if err != nil {
		return err
	}
	saW, err := d.store.Watch(ctx, d.accounts.KeyPrefix(""), rev)
	if err != nil {
		return err
	}
	for {
		select {
		case batch, ok := <-nsW.Events():
			if !ok {
				return nsW.Err()
			}
			for _, ev := range batch {
				if ev.Type != storage.EventDelete {
					d.ensureIfActive(ctx, ev.KV)
				}
			}
		case batch, ok := <-saW.Events():
			if !ok {
				return saW.Err()
			}
			for _, ev := range batch {
				if ev.Type == storage.EventDelete && ev.KV.Key == d.accounts.Key(d.accounts.NamespaceOfKey(ev.KV.Key), defaultAccountName) {
					d.ensureCurrent(ctx, d.accounts.NamespaceOfKey(ev.KV.Key))
				}
			}
		}
	}
}

// ensureCurrent ensures the account of namespace ns as it is stored now:
// an account deleted with its namespace is not made again.
func (d *defaultAccounts) ensureCurrent(ctx context.Context, ns string) {
	kv, err := d.store.Get(ctx, d.namespaces.Key("", ns))
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			d.log.Warn("reading a namespace for its default service account", "namespace", ns, "err", err)
		}
		return
	}
	d.ensureIfActive(ctx, kv)
}

// ensureIfActive creates the default account of the namespace kv holds,
// unless the namespace is being deleted or the account exists.
func (d *defaultAccounts) ensureIfActive(ctx context.Context, kv storage.KV) {
	ns, err := api.ParseObject(kv.Value)
	if err != nil || ns.Metadata()["deletionTimestamp"] != nil {
		return
	}
	if _, err := d.registry.GetStored(ctx, d.accounts, ns.Name(), defaultAccountName); err == nil {
		return
	}
	obj := api.Object{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": defaultAccountName}}
	_, err = d.registry.Create(ctx, d.accounts, ns.Name(), obj)
	if err != nil && !isReason(err, api.StatusReasonAlreadyExists) && !isReason(err, api.StatusReasonNotFound) && ctx.Err() == nil {
		d.log.Warn("creating the default service account", "namespace", ns.Name(), "err", err)
	}
}
