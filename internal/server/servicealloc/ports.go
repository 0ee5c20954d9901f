package servicealloc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/registry"
	"github.com/listwatch/listwatch/storage"
)

// NodePortPrefix is the storage prefix of the node ports taken: one key per
// port, created by the write that takes it and deleted by the one that
// frees it. kube keeps one bitmap of the range in a RangeAllocation
// (/registry/ranges/servicenodeports) updated by compare-and-swap, which
// every allocation of every server rewrites; a key per port makes the
// store's create the lock, as an IPAddress is for a cluster IP, so that
// servers sharing a store never contend but for the same port, and a port
// freed is one delete. No resource is served from these keys.
const NodePortPrefix = "/registry/ranges/servicenodeports/"

// errPortAllocated is kube's port allocator's ErrAllocated.
var errPortAllocated = errors.New("provided port is already allocated")

func nodePortKey(port int) string { return NodePortPrefix + strconv.Itoa(port) }

// portHolder is what a node port's key holds: the Service that took it,
// for an operator reading the store.
type portHolder struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Created   time.Time `json:"created"` // for Repair's grace
}

// allocatePort takes port for svc (kube's Allocate). A dry run takes
// nothing and, as kube's (PortAllocationOperation.Allocate), refuses only
// a port taken, not one out of the range.
func (a *Allocator) allocatePort(ctx context.Context, svc api.Object, port int) error {
	if registry.IsDryRun(ctx) {
		_, err := a.store.Get(ctx, nodePortKey(port))
		switch {
		case err == nil:
			return errPortAllocated
		case errors.Is(err, storage.ErrNotFound):
			return nil
		}
		return err
	}
	if !a.ports.Contains(port) {
		return fmt.Errorf("provided port is not in the valid range. The range of valid ports is %s", a.ports)
	}
	return a.createPortKey(ctx, svc, port)
}

// allocateNextPort takes a free port for svc as kube's AllocateNext: from a
// random place beyond the range's offset, then in the offset.
func (a *Allocator) allocateNextPort(ctx context.Context, svc api.Object) (int, error) {
	off := int(rangeOffset(big.NewInt(int64(a.ports.Size)), 16, 128, 32))
	if p, err := a.allocatePortIn(ctx, svc, a.ports.Base+off, a.ports.Base+a.ports.Size-1); !errors.Is(err, errFull) || off == 0 {
		return p, err
	}
	return a.allocatePortIn(ctx, svc, a.ports.Base, a.ports.Base+off-1)
}

// allocatePortIn is allocateNextPort within lo..hi.
func (a *Allocator) allocatePortIn(ctx context.Context, svc api.Object, lo, hi int) (int, error) {
	n := hi - lo + 1
	start := a.rand.IntN(n)
	for i := range n {
		port := lo + (start+i)%n
		if a.portsTaken.has(strconv.Itoa(port)) {
			continue
		}
		if registry.IsDryRun(ctx) {
			return port, nil
		}
		err := a.createPortKey(ctx, svc, port)
		if err == nil || !errors.Is(err, errPortAllocated) {
			return port, err
		}
	}
	return 0, errFull
}

// createPortKey creates port's key, the lock of the port.
func (a *Allocator) createPortKey(ctx context.Context, svc api.Object, port int) error {
	value, err := json.Marshal(portHolder{Namespace: svc.Namespace(), Name: svc.Name(), Created: time.Now().UTC()})
	if err != nil {
		return err
	}
	_, err = a.store.Create(ctx, nodePortKey(port), value)
	if errors.Is(err, storage.ErrKeyExists) {
		a.portsTaken.add(strconv.Itoa(port))
		return errPortAllocated
	}
	if err != nil {
		return err
	}
	a.portsTaken.add(strconv.Itoa(port))
	return nil
}

// releasePort deletes port's key; releasing a port not taken does nothing.
func (a *Allocator) releasePort(port int) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if _, _, err := a.store.Delete(ctx, nodePortKey(port), 0); err != nil && !errors.Is(err, storage.ErrNotFound) {
		a.log.Warn("releasing a node port", "port", port, "err", err)
		return
	}
	a.portsTaken.remove(strconv.Itoa(port))
}
