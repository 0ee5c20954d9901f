package testserver

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/listwatch/listwatch/internal/server"
	"github.com/listwatch/listwatch/storage"
	"github.com/listwatch/listwatch/storage/bolt"
)

// TestSparseFile checks that a sparse copy reads back as the original:
// zero blocks, a block with one byte set, and a short last block.
func TestSparseFile(t *testing.T) {
	data := make([]byte, 3*sparseBlock+100)
	data[sparseBlock+7] = 1
	data[len(data)-1] = 2
	f := newSparseFile(data)
	if len(f.blocks) != 2 {
		t.Errorf("kept %d blocks, want 2 (the rest are zeros)", len(f.blocks))
	}
	path := filepath.Join(t.TempDir(), "f")
	if err := f.write(path); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, data) {
		t.Errorf("read back %d bytes unlike the %d written", len(got), len(data))
	}
	if err := f.write(path); err == nil {
		t.Error("wrote over an existing file")
	}
}

// TestPKITemplate checks that a server's PKI copied from the template is
// used as it is: nothing issued again, the kubeconfig's CA the template's.
func TestPKITemplate(t *testing.T) {
	a, err := ensurePKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := ensurePKI(filepath.Join(t.TempDir(), "pki"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Made)+len(b.Made) != 0 {
		t.Errorf("issued %v and %v, want the template's certificates as they are", a.Made, b.Made)
	}
	if !bytes.Equal(a.ServerCA, b.ServerCA) || len(a.ServerCA) == 0 {
		t.Error("two copies of the template have different server CAs")
	}
}

// TestStoreTemplateSame checks that the store template is the same at
// every build: it holds the controller Lease, released by its server, and
// two builds hold the same keys (a server stopped as soon as it started
// had, or had not yet, made the Lease).
func TestStoreTemplateSame(t *testing.T) {
	keys := func() []string {
		tpl, err := makeStoreTemplate()
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		if err := tpl.write(filepath.Join(dir, bolt.FileName)); err != nil {
			t.Fatal(err)
		}
		store, err := bolt.Open(dir, bolt.Options{NoSync: true})
		if err != nil {
			t.Fatal(err)
		}
		defer store.Close()
		var keys []string
		opts := storage.ListOptions{}
		for {
			page, err := store.List(t.Context(), "/", opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, kv := range page.KVs {
				keys = append(keys, kv.Key)
				if strings.HasSuffix(kv.Key, "/leases/kube-system/"+server.ControllerLease) && !strings.Contains(string(kv.Value), `"holderIdentity":""`) {
					t.Errorf("the template's controller Lease is held: %s", kv.Value)
				}
			}
			if page.Continue == "" {
				return keys
			}
			opts.Continue = page.Continue
		}
	}
	first, second := keys(), keys()
	if !slices.ContainsFunc(first, func(k string) bool { return strings.HasSuffix(k, "/leases/kube-system/"+server.ControllerLease) }) {
		t.Error("the template lacks the controller Lease")
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("two builds differ (-first +second):\n%s", diff)
	}
}
