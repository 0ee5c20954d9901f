package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
)

// fieldManager names listwatch's writes in managedFields.
const fieldManager = "listwatch"

// applyOptions are the flags of `listwatch apply`.
type applyOptions struct {
	conn   connFlags
	files  []string
	force  bool
	dryRun bool
}

func newApply() *cobra.Command {
	o := &applyOptions{}
	cmd := &cobra.Command{
		Use:   "apply -f FILE|DIR|-",
		Short: "Create or update objects from YAML or JSON manifests with server-side apply",
		Long: `apply sends each object of the manifests as a server-side apply patch with field
manager "listwatch" (kubectl apply --server-side): the server creates missing objects and
merges the fields listwatch owns into existing ones. Fields another manager owns are a
conflict unless --force-conflicts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.conn.register(cmd)
	f := cmd.Flags()
	f.StringSliceVarP(&o.files, "filename", "f", nil, "file, directory or - (stdin) holding the manifests; may be repeated")
	f.BoolVar(&o.force, "force-conflicts", false, "take ownership of fields other managers own")
	f.BoolVar(&o.dryRun, "dry-run", false, "ask the server to check everything but store nothing")
	_ = cmd.MarkFlagRequired("filename")
	return cmd
}

func (o *applyOptions) run(cmd *cobra.Command) error {
	ms, err := readManifests(o.files, cmd.InOrStdin())
	if err != nil {
		return err
	}
	s, err := o.conn.newSession(cmd)
	if err != nil {
		return err
	}
	// As kubectl: every object is tried, and the failures are reported
	// together at the end.
	var errs []error
	for _, m := range ms {
		if err := o.apply(cmd, s, m); err != nil {
			errs = append(errs, fmt.Errorf("error when serverside-apply %q: %w", m.source, err))
		}
	}
	return errors.Join(errs...)
}

func (o *applyOptions) apply(cmd *cobra.Command, s *session, m manifest) error {
	ctx := cmd.Context()
	res, err := s.forKind(ctx, m.obj.APIVersion(), m.obj.Kind())
	if err != nil {
		return err
	}
	ns, err := s.objectNamespace(res, m.obj.Namespace())
	if err != nil {
		return err
	}
	body, err := manifestJSON(m.obj)
	if err != nil {
		return err
	}
	opts := client.PatchOptions{WriteOptions: client.WriteOptions{FieldManager: fieldManager, DryRun: o.dryRun}, Force: o.force}
	if _, err := s.unstructured(res, ns).Patch(ctx, m.obj.Name(), client.ApplyPatchType, body, opts); err != nil {
		return err
	}
	_, err = fmt.Fprintf(s.out, "%s serverside-applied%s\n", kindName(res, m.obj.Name()), dryRunNote(o.dryRun))
	return err
}

func dryRunNote(dryRun bool) string {
	if dryRun {
		return " (server dry run)"
	}
	return ""
}
