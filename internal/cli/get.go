package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
)

// getOptions are the flags of `listwatch get`.
type getOptions struct {
	conn          connFlags
	allNamespaces bool
	selector      string
	output        string
	watch         bool
	watchEvents   bool
	// showManagedFields keeps metadata.managedFields in JSON and YAML
	// output; kubectl leaves them out unless asked.
	showManagedFields bool
}

func newGet() *cobra.Command {
	o := &getOptions{}
	cmd := &cobra.Command{
		Use:   "get RESOURCE[,RESOURCE...] [NAME...]",
		Short: "Print objects as a table (the server's columns), JSON, YAML or names; --watch to follow changes",
		Args:  cobra.MinimumNArgs(1),
		RunE:  func(cmd *cobra.Command, args []string) error { return o.run(cmd, args[0], args[1:]) },
	}
	o.conn.register(cmd)
	f := cmd.Flags()
	f.BoolVarP(&o.allNamespaces, "all-namespaces", "A", false, "list across all namespaces")
	f.StringVarP(&o.selector, "selector", "l", "", "label selector (e.g. app=web,tier!=db)")
	f.StringVarP(&o.output, "output", "o", outTable, "output format: table, wide, json, yaml or name")
	f.BoolVarP(&o.watch, "watch", "w", false, "after printing, watch for changes")
	f.BoolVar(&o.watchEvents, "output-watch-events", false, "with --watch, print the type of each event")
	f.BoolVar(&o.showManagedFields, "show-managed-fields", false, "keep metadata.managedFields in JSON and YAML output")
	return cmd
}

// getRun is one `get` of one resource type: where it reads and how it
// prints.
type getRun struct {
	*getOptions
	s     *session
	res   client.APIResource
	r     *client.Resource[client.Unstructured]
	names []string
}

// errMultipleTypes is kubectl's answer to a watch of several types.
var errMultipleTypes = errors.New("you may only specify a single resource type")

func (o *getOptions) run(cmd *cobra.Command, resources string, names []string) error {
	if err := checkOutput(o.output); err != nil {
		return err
	}
	if len(names) > 0 && (o.allNamespaces || o.selector != "") {
		return fmt.Errorf("names cannot be combined with --all-namespaces or --selector")
	}
	types := strings.Split(resources, ",")
	if o.watch && len(types) > 1 {
		return errMultipleTypes
	}
	if o.watch && len(names) > 1 {
		return fmt.Errorf("--watch takes at most one name")
	}
	s, err := o.conn.newSession(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	runs := make([]*getRun, len(types))
	for i, t := range types {
		res, r, err := s.open(ctx, t, o.allNamespaces)
		if err != nil {
			return err
		}
		runs[i] = &getRun{getOptions: o, s: s, res: res, r: r, names: names}
	}
	if len(runs) > 1 {
		return o.several(ctx, runs)
	}
	g := runs[0]
	if o.output == outTable || o.output == outWide {
		return g.tables(ctx)
	}
	return g.objects(ctx)
}

// several prints several types as kubectl does: a table for each (a
// blank line between them, names prefixed with their kind when more than
// one type has objects), or all the objects in one List.
func (o *getOptions) several(ctx context.Context, runs []*getRun) error {
	s := runs[0].s
	if o.output == outTable || o.output == outWide {
		tables := make([][]*api.Table, len(runs))
		typesWithRows := 0
		for i, g := range runs {
			_, rows, err := g.printTables(ctx, func(t *api.Table) { tables[i] = append(tables[i], t) })
			if err != nil {
				return err
			}
			if rows > 0 {
				typesWithRows++
			}
		}
		printed := false
		for i, g := range runs {
			p := g.newTablePrinter()
			if typesWithRows > 1 {
				p.kind = qualifiedKind(g.res)
			}
			if printed && hasRows(tables[i]) {
				fmt.Fprintln(s.out)
			}
			for _, t := range tables[i] {
				p.add(t, "")
			}
			if err := p.flush(); err != nil {
				return err
			}
			printed = printed || hasRows(tables[i])
		}
		if !printed {
			runs[0].noneFound()
		}
		return nil
	}
	var items []client.Unstructured
	for _, g := range runs {
		got, _, err := g.read(ctx)
		if err != nil {
			return err
		}
		if o.output == outName {
			g.printNames(got)
			continue
		}
		items = append(items, got...)
	}
	if o.output == outName {
		return nil
	}
	if len(items) == 0 && len(runs[0].names) == 0 {
		runs[0].noneFound()
	}
	return printObject(s.out, o.output, listOf(items), true)
}

func hasRows(tables []*api.Table) bool {
	for _, t := range tables {
		if len(t.Rows) > 0 {
			return true
		}
	}
	return false
}

// listOptions select what the list and the watch see.
func (g *getRun) listOptions() client.ListOptions {
	opts := client.ListOptions{LabelSelector: g.selector}
	if len(g.names) == 1 {
		opts.FieldSelector = "metadata.name=" + g.names[0]
	}
	return opts
}

// tables prints the server's Table form, page by page, then follows the
// watch in Table form if asked.
func (g *getRun) tables(ctx context.Context) error {
	p := g.newTablePrinter()
	event := client.EventType("")
	if g.watchEvents {
		event = client.Added
	}
	rv, rows, err := g.printTables(ctx, func(t *api.Table) { p.add(t, event) })
	if err != nil {
		return err
	}
	if err := p.flush(); err != nil {
		return err
	}
	if rows == 0 && !g.watch {
		g.noneFound()
	}
	if !g.watch {
		return nil
	}
	return g.followTables(ctx, p, rv)
}

func (g *getRun) newTablePrinter() *tablePrinter {
	return newTablePrinter(g.s.out, g.output == outWide, g.allNamespaces && g.res.Namespaced, g.watchEvents)
}

// printTables gives add the Tables of the named objects, or every page of
// the list, and returns the list's resourceVersion and the number of rows.
func (g *getRun) printTables(ctx context.Context, add func(*api.Table)) (string, int, error) {
	if len(g.names) > 0 && !g.watch {
		for _, name := range g.names {
			t, err := g.r.GetTable(ctx, name)
			if err != nil {
				return "", 0, err
			}
			add(t)
		}
		return "", len(g.names), nil
	}
	opts := g.listOptions()
	opts.Limit = client.DefaultPageSize
	rows := 0
	for {
		t, err := g.r.ListTable(ctx, opts)
		if err != nil {
			return "", 0, err
		}
		add(t)
		rows += len(t.Rows)
		if t.ListMeta.Continue == "" {
			return t.ListMeta.ResourceVersion, rows, nil
		}
		opts.Continue = t.ListMeta.Continue
	}
}

// followTables prints each watch event as a table row.
func (g *getRun) followTables(ctx context.Context, p *tablePrinter, rv string) error {
	f := &follower[*api.Table]{
		open: func(ctx context.Context, rv string) (client.Watch[*api.Table], error) {
			opts := g.listOptions()
			opts.ResourceVersion = rv
			return g.r.WatchTable(ctx, opts)
		},
		rvOf: func(ev client.Event[*api.Table]) string { return tableRV(ev.Object) },
		handle: func(ev client.Event[*api.Table]) error {
			p.add(ev.Object, ev.Type)
			return p.flush()
		},
	}
	return f.run(ctx, rv)
}

// tableRV is the resourceVersion of a one-row Table's object.
func tableRV(t *api.Table) string {
	if t == nil || len(t.Rows) == 0 {
		return ""
	}
	var m struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(t.Rows[0].Object, &m)
	return m.Metadata.ResourceVersion
}

func (g *getRun) noneFound() {
	if g.allNamespaces || !g.res.Namespaced {
		fmt.Fprintln(g.s.errOut, "No resources found")
		return
	}
	fmt.Fprintf(g.s.errOut, "No resources found in %s namespace.\n", g.s.namespace)
}

// objects prints whole objects (JSON, YAML or names), then follows the
// watch if asked.
func (g *getRun) objects(ctx context.Context) error {
	items, rv, err := g.read(ctx)
	if err != nil {
		return err
	}
	if !g.watch {
		return g.printItems(items)
	}
	p := &eventPrinter{getRun: g}
	for _, it := range items {
		if err := p.print(client.Added, it); err != nil {
			return err
		}
	}
	f := &follower[client.Unstructured]{
		open: func(ctx context.Context, rv string) (client.Watch[client.Unstructured], error) {
			opts := g.listOptions()
			opts.ResourceVersion = rv
			return g.r.Watch(ctx, opts)
		},
		rvOf:   func(ev client.Event[client.Unstructured]) string { return ev.Object.GetResourceVersion() },
		handle: func(ev client.Event[client.Unstructured]) error { return p.print(ev.Type, ev.Object) },
	}
	return f.run(ctx, rv)
}

// read gets the named objects, or lists them all, as they are printed.
func (g *getRun) read(ctx context.Context) ([]client.Unstructured, string, error) {
	if len(g.names) == 0 || g.watch {
		items, rv, err := g.r.ListAll(ctx, g.listOptions())
		for _, it := range items {
			g.trim(it)
		}
		return items, rv, err
	}
	var items []client.Unstructured
	for _, name := range g.names {
		obj, err := g.r.Get(ctx, name)
		if err != nil {
			return nil, "", err
		}
		items = append(items, g.trim(obj))
	}
	return items, "", nil
}

// trim drops what kubectl does not print unless asked: managedFields.
func (g *getRun) trim(obj client.Unstructured) client.Unstructured {
	if !g.showManagedFields {
		delete(obj.Object().Metadata(), "managedFields")
	}
	return obj
}

// printItems prints what get read: one named object alone, else a List.
func (g *getRun) printItems(items []client.Unstructured) error {
	if g.output == outName {
		g.printNames(items)
		return nil
	}
	if len(g.names) == 1 {
		return printObject(g.s.out, g.output, items[0], true)
	}
	if len(items) == 0 && len(g.names) == 0 {
		g.noneFound()
	}
	return printObject(g.s.out, g.output, listOf(items), true)
}

func (g *getRun) printNames(items []client.Unstructured) {
	for _, it := range items {
		fmt.Fprintln(g.s.out, kindName(g.res, it.GetName()))
	}
}

// eventPrinter prints watched objects one by one, wrapped as events with
// --output-watch-events.
type eventPrinter struct {
	*getRun
	printed bool
}

func (p *eventPrinter) print(t client.EventType, obj client.Unstructured) error {
	p.trim(obj)
	first := !p.printed
	p.printed = true
	if p.output == outName {
		_, err := fmt.Fprintln(p.s.out, eventPrefix(p.watchEvents, t)+kindName(p.res, obj.GetName()))
		return err
	}
	if p.watchEvents {
		return printObject(p.s.out, p.output, map[string]any{"type": t, "object": obj}, first)
	}
	return printObject(p.s.out, p.output, obj, first)
}

func eventPrefix(show bool, t client.EventType) string {
	if !show {
		return ""
	}
	return string(t) + " "
}
