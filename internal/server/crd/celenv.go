package crd

import "github.com/google/cel-go/cel"

// BaseCELEnv is the environment CRD rules compile in, kube's base library
// set; admission match conditions extend it with their variables.
func BaseCELEnv() *cel.Env { return celBase }
