package cli

import (
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
)

// apiResourcesOptions are the flags of `listwatch api-resources`.
type apiResourcesOptions struct {
	conn   connFlags
	output string
}

func newAPIResources() *cobra.Command {
	o := &apiResourcesOptions{}
	cmd := &cobra.Command{
		Use:   "api-resources",
		Short: "Print the resources the server serves, in each group's preferred version",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	o.conn.register(cmd)
	cmd.Flags().StringVarP(&o.output, "output", "o", "", "wide (adds verbs and categories) or name")
	return cmd
}

func (o *apiResourcesOptions) run(cmd *cobra.Command) error {
	if o.output != "" && o.output != outWide && o.output != outName {
		return fmt.Errorf("unknown output format %q: use wide or name", o.output)
	}
	s, err := o.conn.newSession(cmd)
	if err != nil {
		return err
	}
	rs, err := s.discover(cmd.Context(), false)
	if err != nil {
		return err
	}
	preferred := preferredResources(rs)
	if o.output == outName {
		for _, r := range preferred {
			fmt.Fprintln(s.out, strings.TrimSuffix(r.Resource+"."+r.Group, "."))
		}
		return nil
	}
	tw := tabwriter.NewWriter(s.out, 6, 4, 3, ' ', 0)
	header := "NAME\tSHORTNAMES\tAPIVERSION\tNAMESPACED\tKIND"
	if o.output == outWide {
		header += "\tVERBS\tCATEGORIES"
	}
	fmt.Fprintln(tw, header)
	for _, r := range preferred {
		line := strings.Join([]string{r.Resource, strings.Join(r.ShortNames, ","), r.GroupVersion(), strconv.FormatBool(r.Namespaced), r.Kind}, "\t")
		if o.output == outWide {
			line += "\t" + strings.Join(r.Verbs, ",") + "\t" + strings.Join(r.Categories, ",")
		}
		fmt.Fprintln(tw, line)
	}
	return tw.Flush()
}

// preferredResources keeps each group's resources in its preferred
// version, the first discovery lists.
func preferredResources(rs client.APIResources) client.APIResources {
	version := map[string]string{} // group -> preferred version
	var out client.APIResources
	for _, r := range rs {
		if v, ok := version[r.Group]; ok && v != r.Version {
			continue
		}
		version[r.Group] = r.Version
		out = append(out, r)
	}
	return out
}
