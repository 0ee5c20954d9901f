package server

import (
	"context"
	"net/http/httptest"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/listwatch/listwatch/storage/memory"
)

// TestControllerLease: a lone server takes the controller Lease as it
// starts, with no wait, says so in leader_election_master_status, and
// releases it at Close, so that another server would take it at once.
func TestControllerLease(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		store := memory.New()
		t.Cleanup(func() { store.Close() })
		start := time.Now()
		s := ttlServer(t, store)
		leases, _ := s.catalog.Get("coordination.k8s.io", "v1", "leases")
		holder := func() string {
			lease, err := s.registry.Get(context.Background(), leases, "kube-system", ControllerLease)
			if err != nil {
				t.Fatal(err)
			}
			h, _ := lease["spec"].(map[string]any)["holderIdentity"].(string)
			return h
		}
		status := func() string {
			rec := httptest.NewRecorder()
			s.metrics.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
			for line := range strings.Lines(rec.Body.String()) {
				if strings.HasPrefix(line, `leader_election_master_status{name="listwatch-controller-manager"}`) {
					return strings.TrimSpace(line[strings.LastIndexByte(line, ' ')+1:])
				}
			}
			return "absent"
		}
		if h, st := holder(), status(); h == "" || st != "1" || time.Since(start) != 0 {
			t.Fatalf("after start: holder %q, leader_election_master_status %s, after %v; want held at once", h, st, time.Since(start))
		}
		s.Close()
		if h, st := holder(), status(); h != "" || st != "0" {
			t.Fatalf("after Close: holder %q, leader_election_master_status %s; want released", h, st)
		}
	})
}
