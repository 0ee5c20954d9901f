package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"sigs.k8s.io/yaml"

	"github.com/listwatch/listwatch/client"
	"github.com/listwatch/listwatch/client/api"
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
// events, names as kind/name when kind is set.
type tablePrinter struct {
	tw            *tabwriter.Writer
	wide          bool
	withNamespace bool
	withEvent     bool
	kind          string
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
		if !p.shown(c) || i >= len(row.Cells) {
			continue
		}
		text := cellText(row.Cells[i])
		if p.kind != "" && c.Format == "name" && c.Type == "string" {
			text = p.kind + "/" + text
		}
		cells = append(cells, text)
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

// cellText is a cell as kubectl prints it: the server's text (nothing for
// null), cut at the first line break with "...", and the terminal's
// escape character shown as "^[" (kubectl's guard against escape
// sequences in objects).
func cellText(v any) string {
	if v == nil {
		return ""
	}
	s, ok := v.(string)
	if !ok {
		// JSON integers are float64 here, int64 in kubectl's decoding.
		if f, isFloat := v.(float64); isFloat && f == math.Trunc(f) && math.Abs(f) < 1<<63 {
			return strconv.FormatInt(int64(f), 10)
		}
		return fmt.Sprint(v)
	}
	if i := strings.IndexAny(s, "\f\n\r"); i >= 0 {
		s = s[:i] + "..."
	}
	return strings.ReplaceAll(s, "\x1b", "^[")
}
