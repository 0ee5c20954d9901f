package interop

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/listwatch/listwatch/internal/testwait"
)

// TestCRDCachesAcrossServersOnEtcd checks that two servers on one etcd
// share CustomResourceDefinitions as kube-apiservers do: a resource that
// one defines is served by the other, and when the definer redefines or
// deletes it, the other's watch cache stops at once, ending its watches.
func TestCRDCachesAcrossServersOnEtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts etcd")
	}
	const (
		crds    = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
		gadgets = "/apis/example.com/v1/gadgets"
		def     = `{"metadata":{"name":"gadgets.example.com"},"spec":{"group":"example.com","scope":"Cluster",
			"names":{"plural":"gadgets","kind":"Gadget"},
			"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`
	)
	tests := []struct{ name, method, contentType, body string }{
		{"redefined", "PATCH", "application/merge-patch+json", `{"metadata":{"labels":{"edited":"yes"}}}`},
		{"deleted", "DELETE", "", ""},
	}
	bin := listwatchBin(t)
	cli := RunEtcd(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := []string{"--storage", "etcd", "--etcd-endpoints", "http://" + cli.Endpoints()[0], "--etcd-prefix", "/" + tt.name}
			definer, follower := StartListwatch(t, bin, args...), StartListwatch(t, bin, args...)
			send(t, "POST", definer.URL+crds, "application/json", def, http.StatusCreated)
			waitServed(t, follower.URL+gadgets)
			ctx, cancel := context.WithTimeout(t.Context(), binStopTimeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, "GET", follower.URL+gadgets+"?watch=true", nil)
			if err != nil {
				t.Fatal(err)
			}
			watch, err := http.DefaultClient.Do(req)
			if err != nil || watch.StatusCode != http.StatusOK {
				t.Fatalf("watch on the follower: %v %v", watch, err)
			}
			defer watch.Body.Close()
			send(t, tt.method, definer.URL+crds+"/gadgets.example.com", tt.contentType, tt.body, http.StatusOK)
			if _, err := io.Copy(io.Discard, watch.Body); err != nil {
				t.Fatalf("the follower's watch did not end cleanly: %v", err)
			}
		})
	}
}

// send makes one request and fails t unless it gets code.
func send(t *testing.T, method, url, contentType, body string, code int) {
	t.Helper()
	header := http.Header{}
	if contentType != "" {
		header.Set("Content-Type", contentType)
	}
	if got, b := fetch(t, method, url, header, []byte(body)); got != code {
		t.Fatalf("%s %s: %d %s, want %d", method, url, got, b, code)
	}
}

// waitServed waits until url answers 200: the server has learnt the
// definition from its watch of the store.
func waitServed(t *testing.T, url string) {
	t.Helper()
	testwait.UntilNil(t, binStartTimeout, url+" to be served", func() error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return errors.New(resp.Status)
		}
		return nil
	})
}
