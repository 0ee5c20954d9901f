package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/api"
	"github.com/listwatch/listwatch/client"
)

// Output formats of get.
const (
	outTable = "table"
	outWide  = "wide"
	outJSON  = "json"
	outYAML  = "yaml"
	outName  = "name"
)

func checkOutput(o string) error {
	switch o {
	case outTable, outWide, outJSON, outYAML, outName:
		return nil
	}
	return fmt.Errorf("unknown output format %q: use table, wide, json, yaml or name", o)
}

// printObject writes v as indented JSON or as YAML (after a "---" line
// when it is not the first of a stream).
func printObject(w io.Writer, format string, v any, first bool) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("encoding the output: %w", err)
	}
	if format == outYAML {
		if b, err = yaml.JSONToYAML(b); err != nil {
			return fmt.Errorf("encoding the output as YAML: %w", err)
		}
		if !first {
			b = append([]byte("---\n"), b...)
		}
		_, err = w.Write(b)
		return err
	}
	_, err = fmt.Fprintf(w, "%s\n", b)
	return err
}

// listOf wraps items as kubectl prints several objects: a v1 List.
func listOf(items []client.Unstructured) map[string]any {
	if items == nil {
		items = []client.Unstructured{}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "metadata": map[string]any{"resourceVersion": ""}, "items": items}
}

// tablePrinter prints Table rows aligned in columns, as kubectl does:
// upper-case headers once, the columns of priority 0 (all with wide), a
// NAMESPACE column first across namespaces, an EVENT column for watch
// events.
type tablePrinter struct {
	tw            *tabwriter.Writer
	wide          bool
	withNamespace bool
	withEvent     bool
	columns       []api.TableColumnDefinition // from the first table
	headerDone    bool
}

func newTablePrinter(w io.Writer, wide, withNamespace, withEvent bool) *tablePrinter {
	return &tablePrinter{tw: tabwriter.NewWriter(w, 6, 4, 3, ' ', 0), wide: wide, withNamespace: withNamespace, withEvent: withEvent}
}

// add prints t's rows (with the header, before the first rows); event is
// the watch event type when the printer shows events.
func (p *tablePrinter) add(t *api.Table, event client.EventType) {
	if p.columns == nil {
		p.columns = t.ColumnDefinitions
	}
	if !p.headerDone && len(t.Rows) > 0 {
		p.header()
	}
	for _, row := range t.Rows {
		p.row(row, event)
	}
}

func (p *tablePrinter) header() {
	p.headerDone = true
	var cells []string
	if p.withEvent {
		cells = append(cells, "EVENT")
	}
	if p.withNamespace {
		cells = append(cells, "NAMESPACE")
	}
	for _, c := range p.columns {
		if p.shown(c) {
			cells = append(cells, strings.ToUpper(c.Name))
		}
	}
	fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
}

func (p *tablePrinter) shown(c api.TableColumnDefinition) bool { return p.wide || c.Priority == 0 }

func (p *tablePrinter) row(row api.TableRow, event client.EventType) {
	var cells []string
	if p.withEvent {
		cells = append(cells, string(event))
	}
	if p.withNamespace {
		cells = append(cells, rowNamespace(row))
	}
	for i, c := range p.columns {
		if p.shown(c) && i < len(row.Cells) {
			cells = append(cells, cellText(c, row.Cells[i]))
		}
	}
	fmt.Fprintln(p.tw, strings.Join(cells, "\t"))
}

// flush writes what is buffered; a watch flushes after every event.
func (p *tablePrinter) flush() error { return p.tw.Flush() }

// rowNamespace reads the namespace of a row's object (PartialObjectMetadata).
func rowNamespace(row api.TableRow) string {
	var m struct {
		Metadata struct {
			Namespace string `json:"namespace"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(row.Object, &m)
	return m.Metadata.Namespace
}

// cellText formats a cell as kubectl does: <none> for nothing, a date as
// the time since.
func cellText(c api.TableColumnDefinition, v any) string {
	if v == nil || v == "" {
		return "<none>"
	}
	if s, ok := v.(string); ok && c.Type == "date" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			return shortDuration(time.Since(t))
		}
	}
	return fmt.Sprint(v)
}

// shortDuration is kubectl's compact age: 45s, 12m, 5h, 3d.
func shortDuration(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < 2*time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < 2*time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}
