package server

import (
	"context"
	"errors"
	"testing"

	"github.com/listwatch/listwatch/client/api"
)

// TestQuotaLockEndsWithContext checks that a write waiting for its
// namespace's quota lock gives up with kube's 504 when its request ends,
// and that the lock still works after.
func TestQuotaLockEndsWithContext(t *testing.T) {
	var l quotaLocks
	unlock, err := l.lock(t.Context(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error)
	go func() {
		_, err := l.lock(ctx, "ns")
		done <- err
	}()
	cancel()
	err = <-done
	var se *api.StatusError
	if !errors.As(err, &se) || se.Status.Code != 504 || se.Status.Reason != api.StatusReasonTimeout ||
		se.Status.Message != "Timeout: request did not complete within requested timeout - context canceled" {
		t.Fatalf("got %v, want kube's 504", err)
	}
	unlock()
	unlock, err = l.lock(t.Context(), "ns")
	if err != nil {
		t.Fatal(err)
	}
	unlock()
}
