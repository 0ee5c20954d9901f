package server

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/internal/follow"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// defaultAccountName is the service account every namespace has.
const defaultAccountName = "default"

// ensureConcurrency bounds the namespaces whose accounts are ensured at
// once at start.
const ensureConcurrency = 16

// defaultAccounts keeps a `default` ServiceAccount in every namespace that
// is not being deleted, as kube-controller-manager's serviceaccounts
// controller: for every namespace at start, for each new one, and again
// when it is deleted. It follows the store itself (one follow.Follower of
// namespaces, one of service accounts), so the accounts of a namespace
// another server on the same store created are made too (creates are
// idempotent: every server may try).
type defaultAccounts struct {
	registry             *registry.Registry
	store                storage.Interface
	namespaces, accounts *resource.Resource
	log                  *slog.Logger

	ctx       context.Context // of the creates; ended by close
	cancel    context.CancelFunc
	followers []*follow.Follower

	mu sync.Mutex
	// starting holds, while start lists them, the namespaces to ensure
	// concurrently (on a fresh store their creates then share group
	// commits, as ensureNamespaces'); nil once started. Guarded by mu.
	starting [][]byte
}

// startDefaultAccounts ensures the account of every namespace, so that a
// server serves them from its first request, then follows the store; close
// stops it.
func startDefaultAccounts(ctx context.Context, reg *registry.Registry, store storage.Interface, catalog *resource.Catalog, log *slog.Logger) (*defaultAccounts, error) {
	d := &defaultAccounts{registry: reg, store: store, log: log}
	d.namespaces, _ = catalog.Get("", "v1", "namespaces")
	d.accounts, _ = catalog.Get("", "v1", "serviceaccounts")
	d.ctx, d.cancel = context.WithCancel(context.WithoutCancel(ctx))
	d.starting = [][]byte{}
	for _, f := range []struct {
		res   *resource.Resource
		what  string
		apply follow.Apply
	}{
		{d.namespaces, "namespaces for their default service accounts", d.namespaceChanged},
		{d.accounts, "default service accounts", d.accountChanged},
	} {
		follower, err := follow.Start(ctx, store, f.res.KeyPrefix(""), f.what, f.apply, log)
		if err != nil {
			d.close()
			return nil, err
		}
		d.followers = append(d.followers, follower)
	}
	d.mu.Lock()
	listed := d.starting
	d.starting = nil
	d.mu.Unlock()
	var wg sync.WaitGroup
	sem := make(chan struct{}, ensureConcurrency)
	for _, ns := range listed {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			d.ensureIfActive(ctx, ns)
		})
	}
	wg.Wait()
	return d, nil
}

// close stops the followers and waits for them.
func (d *defaultAccounts) close() {
	d.cancel()
	for _, f := range d.followers {
		f.Close()
	}
}

// namespaceChanged ensures the account of a namespace listed, created or
// changed.
func (d *defaultAccounts) namespaceChanged(_ string, _ int64, value []byte) {
	if value == nil {
		return
	}
	d.mu.Lock()
	if d.starting != nil {
		d.starting = append(d.starting, value)
		d.mu.Unlock()
		return
	}
	d.mu.Unlock()
	d.ensureIfActive(d.ctx, value)
}

// accountChanged ensures the account of the namespace of a default
// account deleted.
func (d *defaultAccounts) accountChanged(key string, _ int64, value []byte) {
	ns := d.accounts.NamespaceOfKey(key)
	if value == nil && key == d.accounts.Key(ns, defaultAccountName) {
		d.ensureCurrent(d.ctx, ns)
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
	d.ensureIfActive(ctx, kv.Value)
}

// ensureIfActive creates the default account of the namespace value holds,
// unless the namespace is being deleted or the account exists.
func (d *defaultAccounts) ensureIfActive(ctx context.Context, value []byte) {
	ns, err := api.ParseObject(value)
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
