// Command listwatch is the listwatch server and CLI: `listwatch serve`
// serves the Kubernetes API on an embedded or etcd store.
package main

import (
	"os"

	"github.com/listwatch/listwatch/internal/cli"
)

func main() { os.Exit(cli.Main(os.Args[1:])) }
