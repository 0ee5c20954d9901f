package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
)

// connFlags are the flags of every client command, as kubectl's: which
// kubeconfig, context and server, and which namespace.
type connFlags struct {
	kubeconfig     string
	context        string
	server         string
	namespace      string
	requestTimeout time.Duration
	as, asUID      string
	asGroups       []string
}

func (f *connFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config)")
	fl.StringVar(&f.context, "context", "", "the kubeconfig context to use")
	fl.StringVarP(&f.server, "server", "s", "", "the address of the API server (default: the context's, else "+client.DefaultServer+")")
	fl.StringVarP(&f.namespace, "namespace", "n", "", "the namespace (default: the context's, else default)")
	fl.DurationVar(&f.requestTimeout, "request-timeout", 0, "bound on each non-watch request (0: "+client.DefaultTimeout.String()+")")
	fl.StringVar(&f.as, "as", "", "the user to impersonate (the kubeconfig's as)")
	fl.StringArrayVar(&f.asGroups, "as-group", nil, "a group to impersonate, may be repeated (replaces the kubeconfig's as-groups)")
	fl.StringVar(&f.asUID, "as-uid", "", "the UID to impersonate (the kubeconfig's as-uid)")
}

// impersonate lays the flags over the kubeconfig's impersonation, each
// given one replacing its field, as kubectl's do.
func (f *connFlags) impersonate(imp *client.ImpersonationConfig) {
	if f.as != "" {
		imp.UserName = f.as
	}
	if f.asUID != "" {
		imp.UID = f.asUID
	}
	if len(f.asGroups) > 0 {
		imp.Groups = f.asGroups
	}
}

// session is one run of a client command: its client, namespace, output
// and the server's resources, discovered once when first needed.
type session struct {
	c          *client.Client
	namespace  string // the flag's, the context's, or "default"
	explicitNS bool   // -n was given
	out        io.Writer
	errOut     io.Writer
	resources  client.APIResources
}

// newSession connects as the flags say; with no kubeconfig and no
// --server, to the local server, as kubectl falls back to localhost:8080.
func (f *connFlags) newSession(cmd *cobra.Command) (*session, error) {
	cfg, err := client.LoadKubeconfig(client.KubeconfigOptions{Path: f.kubeconfig, Context: f.context, Server: f.server})
	if errors.Is(err, client.ErrNoConfig) {
		cfg, err = client.ConfigForURL(client.DefaultServer), nil
	}
	if err != nil {
		return nil, err
	}
	cfg.Timeout = f.requestTimeout
	f.impersonate(&cfg.Impersonate)
	c, err := client.New(cfg)
	if err != nil {
		return nil, err
	}
	ns := f.namespace
	if ns == "" {
		ns = cfg.Namespace
	}
	if ns == "" {
		ns = "default"
	}
	return &session{c: c, namespace: ns, explicitNS: f.namespace != "", out: cmd.OutOrStdout(), errOut: cmd.ErrOrStderr()}, nil
}

// discover reads the server's resources once; again when refresh is set.
func (s *session) discover(ctx context.Context, refresh bool) (client.APIResources, error) {
	if s.resources != nil && !refresh {
		return s.resources, nil
	}
	rs, err := s.c.Discover(ctx)
	if err != nil {
		return nil, err
	}
	s.resources = rs
	return rs, nil
}

// resolve maps a resource name as typed to a served resource.
func (s *session) resolve(ctx context.Context, arg string) (client.APIResource, error) {
	rs, err := s.discover(ctx, false)
	if err != nil {
		return client.APIResource{}, err
	}
	return rs.Resolve(arg)
}

// forKind finds the resource of a manifest's apiVersion and kind,
// discovering again once when it is unknown (a definition applied earlier
// in the same run may have added it).
func (s *session) forKind(ctx context.Context, apiVersion, kind string) (client.APIResource, error) {
	rs, err := s.discover(ctx, false)
	if err != nil {
		return client.APIResource{}, err
	}
	if r, err := rs.ForKind(apiVersion, kind); err == nil {
		return r, nil
	}
	if rs, err = s.discover(ctx, true); err != nil {
		return client.APIResource{}, err
	}
	return rs.ForKind(apiVersion, kind)
}

// objectNamespace is where an object of res goes: "" for cluster-scoped
// resources, the object's own namespace if it has one (which must agree
// with an explicit -n), else the session's.
func (s *session) objectNamespace(res client.APIResource, objNS string) (string, error) {
	switch {
	case !res.Namespaced:
		return "", nil
	case objNS == "":
		return s.namespace, nil
	case s.explicitNS && objNS != s.namespace:
		return "", fmt.Errorf("the namespace from the provided object %q does not match the namespace %q: pass --namespace=%s", objNS, s.namespace, objNS)
	}
	return objNS, nil
}

// open resolves arg and returns access to it in the session's namespace,
// or in all of them.
func (s *session) open(ctx context.Context, arg string, allNamespaces bool) (client.APIResource, *client.Resource[client.Unstructured], error) {
	res, err := s.resolve(ctx, arg)
	if err != nil {
		return res, nil, err
	}
	ns := s.namespace
	if allNamespaces {
		ns = ""
	}
	return res, s.unstructured(res, ns), nil
}

// unstructured returns access to res in namespace as untyped objects.
func (s *session) unstructured(res client.APIResource, namespace string) *client.Resource[client.Unstructured] {
	if !res.Namespaced {
		namespace = ""
	}
	return client.NewResource[client.Unstructured](s.c, res.GroupVersionResource, namespace)
}

// kindName is how kubectl names an object of res in messages:
// "configmap/a", "deployment.apps/b".
func kindName(res client.APIResource, name string) string {
	return qualifiedKind(res) + "/" + name
}

// qualifiedKind is the lower-case kind with its group: "deployment.apps".
func qualifiedKind(res client.APIResource) string {
	k := strings.ToLower(res.Kind)
	if res.Group != "" {
		k += "." + res.Group
	}
	return k
}
