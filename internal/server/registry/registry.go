// Package registry is the server's generic object store: create, get, list,
// update, delete and deletecollection for any Resource over a
// storage.Interface, with the object metadata kube-apiserver maintains
// (uid, creationTimestamp, resourceVersion, generation, generateName),
// Kubernetes' name and label validation, namespace existence, optimistic
// concurrency, finalizers (among them the garbage collector's, which a
// delete sets by its propagation policy), and the namespace lifecycle.
//
// Objects are stored as JSON without metadata.resourceVersion; it is the
// storage revision of the object's last write and is set on every read.
package registry

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/listwatch/listwatch/client/api"
	"github.com/listwatch/listwatch/internal/server/apierror"
	"github.com/listwatch/listwatch/internal/server/resource"
	"github.com/listwatch/listwatch/storage"
)

// Registry stores objects of any resource in one storage.Interface.
type Registry struct {
	store storage.Interface
	now   func() time.Time
	log   *slog.Logger // told of stored values that cannot be decoded
}

// New returns a Registry over store.
func New(store storage.Interface, log *slog.Logger) *Registry {
	return &Registry{store: store, now: time.Now, log: log}
}

// Storage returns the store the registry writes to.
func (r *Registry) Storage() storage.Interface { return r.store }

func target(res *resource.Resource, name string) apierror.Target {
	return apierror.Target{Group: res.Group, Resource: res.Plural, Name: name}
}

// decode turns a stored KV into the object it holds, with resourceVersion set.
func decode(kv storage.KV) (api.Object, error) {
	obj, err := api.ParseObject(kv.Value)
	if err != nil {
		return nil, fmt.Errorf("decoding %s: %w", kv.Key, err)
	}
	obj.SetMeta("resourceVersion", strconv.FormatInt(kv.ModRevision, 10))
	return obj, nil
}

// encode returns the stored form of obj: JSON without resourceVersion.
func encode(obj api.Object) ([]byte, error) {
	md := obj.Metadata()
	rv, had := md["resourceVersion"]
	delete(md, "resourceVersion")
	b, err := api.MarshalObject(obj)
	if had {
		md["resourceVersion"] = rv
	}
	return b, err
}

// encodeFor is encode in the form res is stored in (a CRD's objects are
// stored once, in its storage version; events.k8s.io/v1 Events as core/v1
// Events); obj is left as it was. With ToStorage, it also returns the
// stored object the bytes encode, for readBack. Its errors are the
// request's: the conversion's as it failed, others a 500.
func encodeFor(ctx context.Context, res *resource.Resource, obj api.Object) (b []byte, stored api.Object, err error) {
	switch {
	case res.ToStorage != nil:
		if stored, err = res.ToStorage(ctx, obj); err != nil {
			return nil, nil, err
		}
		b, err = encode(stored)
	case res.Storage == nil:
		b, err = encode(obj)
	default:
		served := obj["apiVersion"]
		obj["apiVersion"] = res.Storage.APIVersion()
		b, err = encode(obj)
		obj["apiVersion"] = served
	}
	if err != nil {
		return nil, nil, apierror.Internal(fmt.Errorf("encoding %s: %w", res.Kind, err))
	}
	return b, stored, nil
}

// readBack answers a write as kube's store does, with the object its codec
// decodes from what was written (a dry run's too, as kube's dry-run
// storage round-trips through the codec): a resource stored in another
// form (ToStorage) answers its stored object converted back, a conversion
// webhook's round trip; one that only reads with defaults (FromStorage)
// answers the written object with them. Neither parses the bytes written
// again: the objects they were encoded from are at hand.
func readBack(ctx context.Context, res *resource.Resource, out Written) (Written, error) {
	var err error
	switch {
	case res.FromStorage == nil:
	case out.stored != nil:
		if rev := out.Stored.ModRevision; rev != 0 { // a dry-run create has none
			withRevision(out.stored, rev)
		}
		out.Object, err = res.FromStorage(ctx, out.stored)
	default:
		out.Object, err = res.FromStorage(ctx, out.Object)
	}
	out.stored = nil
	return out, err
}

// withRevision sets obj's resourceVersion to rev and returns obj.
func withRevision(obj api.Object, rev int64) api.Object {
	obj.SetMeta("resourceVersion", strconv.FormatInt(rev, 10))
	return obj
}

// ParseResourceVersion parses a resourceVersion as kube-apiserver does:
// "" and "0" are 0, otherwise a positive decimal integer.
func ParseResourceVersion(rv string) (int64, error) {
	if rv == "" {
		return 0, nil
	}
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("invalid resource version %q", rv)
	}
	return n, nil
}

// Get returns one object.
func (r *Registry) Get(ctx context.Context, res *resource.Resource, ns, name string) (api.Object, error) {
	kv, err := r.GetStored(ctx, res, ns, name)
	if err != nil {
		return nil, err
	}
	return Decode(ctx, res, kv)
}

// GetStored returns one object as stored, for Decode or JSON.
func (r *Registry) GetStored(ctx context.Context, res *resource.Resource, ns, name string) (storage.KV, error) {
	kv, err := r.store.Get(ctx, res.Key(ns, name))
	if err != nil {
		return storage.KV{}, apierror.FromStorage(err, target(res, name))
	}
	return kv, nil
}

// Decode returns the object a stored KV of res holds, as res serves it.
// Its errors are Statuses: a conversion's as it failed (in a
// ConversionError), others a 500. A conversion webhook's call ends with ctx.
func Decode(ctx context.Context, res *resource.Resource, kv storage.KV) (api.Object, error) {
	obj, err := decode(kv)
	if err != nil {
		return nil, apierror.Internal(err)
	}
	if obj, err = convert(ctx, res, obj); err != nil {
		return nil, &ConversionError{Err: err}
	}
	return obj, nil
}

// ConversionError is Decode's error for a value that decoded but whose
// conversion failed (a CRD's conversion webhook): unlike a value that
// cannot be decoded, it may read later. It unwraps to the conversion's
// Status.
type ConversionError struct{ Err error }

func (e *ConversionError) Error() string { return e.Err.Error() }
func (e *ConversionError) Unwrap() error { return e.Err }

// convert turns a stored object into res's form: its apiVersion (CRD
// versions share storage), and its fields when res has FromStorage.
func convert(ctx context.Context, res *resource.Resource, obj api.Object) (api.Object, error) {
	if res.FromStorage != nil {
		return res.FromStorage(ctx, obj)
	}
	obj["apiVersion"] = res.APIVersion()
	return obj, nil
}

// GenerateSuffix returns kube's 5 random characters for generateName
// (apiserver names.SimpleNameGenerator).
func GenerateSuffix() string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return string(b)
}

// NewUID returns a random RFC 4122 version 4 UUID.
func NewUID() string {
	var u [16]byte
	_, _ = rand.Read(u[:])
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:])
}
