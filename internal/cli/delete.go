package cli

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
)

// deleteOptions are the flags of `listwatch delete`.
type deleteOptions struct {
	conn           connFlags
	files          []string
	ignoreNotFound bool
}

func newDelete() *cobra.Command {
	o := &deleteOptions{}
	cmd := &cobra.Command{
		Use:   "delete (RESOURCE NAME... | -f FILE|DIR|-)",
		Short: "Delete objects by resource and name, or those of manifests",
		RunE:  func(cmd *cobra.Command, args []string) error { return o.run(cmd, args) },
	}
	o.conn.register(cmd)
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "file, directory or - (stdin) naming the objects to delete")
	f.BoolVar(&o.ignoreNotFound, "ignore-not-found", false, "treat an object that does not exist as deleted")
	return cmd
}

// target is one object to delete.
type target struct {
	res  client.APIResource
	ns   string
	name string
}

func (o *deleteOptions) run(cmd *cobra.Command, args []string) error {
	if (len(o.files) > 0) == (len(args) > 0) {
		return fmt.Errorf("give either RESOURCE NAME... or -f, not both or neither")
	}
	s, err := o.conn.newSession(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	targets, err := o.targets(ctx, s, cmd, args)
	if err != nil {
		return err
	}
	for _, t := range targets {
		err := s.unstructured(t.res, t.ns).Delete(ctx, t.name, client.DeleteOptions{})
		switch {
		case client.IsNotFound(err) && o.ignoreNotFound:
			continue
		case err != nil:
			return err
		}
		fmt.Fprintf(s.out, "%s %q deleted\n", qualifiedKind(t.res), t.name)
	}
	return nil
}

// targets are the objects the arguments or the manifests name.
func (o *deleteOptions) targets(ctx context.Context, s *session, cmd *cobra.Command, args []string) ([]target, error) {
	if len(args) > 0 {
		if len(args) < 2 {
			return nil, fmt.Errorf("give the names of the %s to delete", args[0])
		}
		res, err := s.resolve(ctx, args[0])
		if err != nil {
			return nil, err
		}
		var ts []target
		for _, name := range args[1:] {
			ts = append(ts, target{res: res, ns: s.namespace, name: name})
		}
		return ts, nil
	}
	ms, err := readManifests(o.files, cmd.InOrStdin())
	if err != nil {
		return nil, err
	}
	var ts []target
	for _, m := range ms {
		res, err := s.forKind(ctx, m.obj.APIVersion(), m.obj.Kind())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.source, err)
		}
		ns, err := s.objectNamespace(res, m.obj.Namespace())
		if err != nil {
			return nil, err
		}
		ts = append(ts, target{res: res, ns: ns, name: m.obj.Name()})
	}
	return ts, nil
}
