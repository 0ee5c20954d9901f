package testserver_test

import (
	"context"
	"fmt"
	"log"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/testserver"
)

// A test suite's TestMain, or a test through New, starts a server with
// the definitions of its controller's config/crd directory and hands its
// kubeconfig to the code under test; this module's client takes
// ClientConfig.
func ExampleStart() {
	s, err := testserver.Start(context.Background(), testserver.Options{CRDDirectoryPaths: []string{"testdata/crds"}})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Stop()
	for _, crd := range s.CRDs {
		fmt.Println("installed", crd.Name())
	}
	c, err := client.New(s.ClientConfig())
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	namespaces, _, _, err := client.NewResource[client.Unstructured](c, client.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "").List(context.Background(), client.ListOptions{})
	if err != nil {
		log.Fatal(err)
	}
	for _, ns := range namespaces {
		fmt.Println("namespace", ns.GetName())
	}
	// Output:
	// installed gadgets.example.listwatch.io
	// installed widgets.example.listwatch.io
	// namespace default
	// namespace kube-node-lease
	// namespace kube-public
	// namespace kube-system
}
