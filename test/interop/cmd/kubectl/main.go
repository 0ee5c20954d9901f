// Command kubectl is kubectl built from k8s.io/kubectl at the version this
// module requires, as the upstream binary's main does, so the interop tests
// run a current kubectl against listwatch without downloading one.
package main

import (
	"k8s.io/component-base/cli"
	"k8s.io/kubectl/pkg/cmd"
	"k8s.io/kubectl/pkg/cmd/util"
)

func main() {
	if err := cli.RunNoErrOutput(cmd.NewDefaultKubectlCommand()); err != nil {
		util.CheckErr(err)
	}
}
