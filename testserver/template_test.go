package testserver

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
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
