package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
)

// The placeholders written by schema init. Validate refuses a schema that
// still holds one (schema.ErrPlaceholder).
const (
	todoTarget     = `the column to predict. Continuous: declare "range": [lo, hi], its public bounds (after an optional "transform": "log", "log1p" or "sqrt"). Binary: declare "positive": "<label>", or "above": <threshold>, or nothing for a 0/1 column. Optional: "missing": "drop". Then delete this "todo".`
	todoFeature    = `numeric: declare "range": [lo, hi] (public bounds from domain knowledge, never from the data); categorical: declare "categories": ["level1", "level2", ...] (the first is the reference level). Optional: "missing": "drop", or "missing": "impute" with "impute": <public value>. Delete this feature if it is an identifier or not wanted. Then delete this "todo".`
	todoPickTarget = "TODO: name of the column to predict"
)

func newSchemaCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Write a schema template from a table's header",
		Long: `The schema declares the public facts a private fit rests on (feature ranges,
category lists, the target's range or label). 'schema init' writes a template
from the header only: every column gets a "todo" placeholder to fill in from
public knowledge. Nothing is read off the data rows, and 'dplearn fit' refuses
the schema while a placeholder remains.`,
	}
	var data, target, out, delimiter string
	var force bool
	initCmd := &cobra.Command{
		Use:   "init --data FILE [--target COLUMN] [--out SCHEMA.json]",
		Short: "Write a schema template with a placeholder per column",
		Long: `init reads the header of --data (CSV or Parquet; no data row is read) and
writes a schema template: the target (--target, or a placeholder naming it)
and one feature per other column, each with a "todo" placeholder that says
what to declare. Fill in each column's public bounds, delete columns you do
not want (identifiers), delete the "todo" keys, then fit.`,
		Example: `  dplearn schema init --data visits.csv --target readmitted --out visits.json
  dplearn schema init --data visits.csv --delimiter ';'            # to standard output`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "data"); err != nil {
				return err
			}
			if err := refuseSameFile([]fileFlag{{"--out", out}}, []fileFlag{{"--data", data}}); err != nil {
				return err
			}
			sep, err := parseDelimiter(delimiter)
			if err != nil {
				return err
			}
			header, err := dataset.ReadHeader(data, dataset.Options{Delimiter: sep, Stdin: cmd.InOrStdin()})
			if err != nil {
				return readErr("--data", err)
			}
			doc, err := schemaTemplate(header, target, sep)
			if err != nil {
				return err
			}
			if out != "-" && !force {
				if _, err := os.Lstat(out); err == nil {
					return fmt.Errorf("--out %s exists (it may be a schema you filled in): pass --force to replace it, or choose another name", out)
				}
			}
			if err := writeOutput(out, cmd.OutOrStdout(), doc); err != nil {
				return fmt.Errorf("--out: %w", err)
			}
			if out != "-" {
				fmt.Fprintf(cmd.OutOrStdout(), "Wrote a schema template with %s to %s: fill in every \"todo\" with public bounds, then delete the \"todo\" keys.\n", dataset.Plural(int64(len(header)), "column"), out)
			}
			return nil
		},
	}
	f := initCmd.Flags()
	f.StringVar(&data, "data", "", "table whose header names the columns: CSV, CSV.gz or Parquet (- for standard input)")
	f.StringVar(&target, "target", "", "the column to predict (default: a placeholder to fill in)")
	f.StringVar(&out, "out", "-", "where to write the template (- for standard output)")
	f.StringVar(&delimiter, "delimiter", ",", "CSV field delimiter: ',', ';', tab or '|'")
	f.BoolVar(&force, "force", false, "replace an existing --out file")
	cmd.AddCommand(initCmd, newSchemaSuggestCmd())
	return cmd
}

// schemaTemplate writes the template JSON, one column per line.
func schemaTemplate(header []string, target string, sep byte) ([]byte, error) {
	var names []string
	for _, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if h == "" {
			return nil, errors.New("--data: the header has an empty column name; name every column first")
		}
		if slices.Contains(names, h) {
			return nil, fmt.Errorf("--data: the header names column %q twice", h)
		}
		names = append(names, h)
	}
	if len(names) == 1 {
		msg := fmt.Sprintf("--data: the header has a single column %q", names[0])
		for _, d := range []byte{';', '\t', ',', '|'} {
			if d != sep && strings.IndexByte(names[0], d) >= 0 {
				return nil, fmt.Errorf("%s; the file looks %s-separated: pass --delimiter %s", msg, dataset.DelimiterName(d), dataset.DelimiterFlag(d))
			}
		}
		return nil, fmt.Errorf("%s: a schema needs a target and at least one feature", msg)
	}
	if target != "" && !slices.Contains(names, target) {
		return nil, fmt.Errorf("--target %q is not a column of --data (it has %s)", target, strings.Join(names, ", "))
	}
	type entry struct {
		Name string `json:"name"`
		Todo string `json:"todo"`
	}
	line := func(e entry) string {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		_ = enc.Encode(e) // two strings: cannot fail
		return strings.TrimSpace(b.String())
	}
	var buf bytes.Buffer
	tname := target
	if tname == "" {
		tname = todoPickTarget
	}
	tt := todoTarget
	if target == "" {
		tt = "choose the column to predict, put its name here and delete its feature entry below; " + todoTarget
	}
	fmt.Fprintf(&buf, "{\n \"target\": %s,\n \"features\": [\n", line(entry{tname, tt}))
	first := true
	for _, n := range names {
		if n == target {
			continue
		}
		if !first {
			buf.WriteString(",\n")
		}
		first = false
		fmt.Fprintf(&buf, "  %s", line(entry{n, todoFeature}))
	}
	buf.WriteString("\n ]\n}\n")
	return buf.Bytes(), nil
}
