// Package cli holds listwatch's commands (serve, and the client commands),
// built with cobra; cmd/listwatch only calls Main.
package cli

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Main runs the command line args and returns the process exit code.
// SIGINT and SIGTERM cancel the command's context.
func Main(args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	root.SetArgs(args)
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		return 1
	}
	return 0
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "listwatch",
		Short:         "The Kubernetes List-Watch mechanism as a standalone server and client",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(newServe())
	root.AddCommand(newBench())
	root.AddCommand(newGet(), newWatch(), newApply(), newDelete(), newAPIResources())
	return root
}
