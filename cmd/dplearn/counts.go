package main

import (
	"fmt"
	"io"
	"sort"
	"text/tabwriter"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/schema"
)

// printDataCounts prints, for the local console only, what reading did to
// the data: per column the values clipped to the declared range, imputed,
// read as the reference level, the records dropped for a missing value and
// the bad records skipped. Every one of these numbers depends on the
// private data (PRIVACY-NOTES item 23): it goes to this console and never
// into a model file, a report or JSON meant for release.
func printDataCounts(w io.Writer, sum dataset.Summary) {
	c := sum.Columns
	if c == nil {
		return
	}
	type line struct {
		name                                     string
		clipped, imputed, dropped, unknown, skip int64
	}
	var lines []line
	seen := map[string]bool{}
	for i, name := range c.Columns {
		l := line{name, c.Clipped[i], c.Imputed[i], c.Dropped[i], c.Unknown[i], sum.SkippedByColumn[name]}
		seen[name] = true
		if l.clipped+l.imputed+l.dropped+l.unknown+l.skip > 0 {
			lines = append(lines, l)
		}
	}
	var other []string
	for name := range sum.SkippedByColumn {
		if !seen[name] {
			other = append(other, name)
		}
	}
	sort.Strings(other)
	for _, name := range other {
		lines = append(lines, line{name: name, skip: sum.SkippedByColumn[name]})
	}
	if len(lines) == 0 {
		fmt.Fprintln(w, "\nData handling: no value was clipped, imputed or missing (shown on this console only).")
		return
	}
	fmt.Fprintln(w, "\nData handling (depends on the data: shown on this console only, never written to the model):")
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  column\tclipped\timputed\tunknown → reference\trows dropped (missing)\tbad rows skipped")
	for _, l := range lines {
		fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%d\t%d\n", l.name, l.clipped, l.imputed, l.unknown, l.dropped, l.skip)
	}
	tw.Flush()
}

// missingOverride returns s with every column whose missing-value policy
// is "error" set to policy ("drop"), for --missing on predict and evaluate;
// "schema" (or "") returns s unchanged.
func missingOverride(s *schema.Schema, policy string) (*schema.Schema, error) {
	switch policy {
	case "", "schema":
		return s, nil
	case schema.MissingDrop:
	default:
		return nil, fmt.Errorf("--missing %q: want schema (the model's own policies) or drop", policy)
	}
	c := *s
	c.Features = append([]schema.Feature(nil), s.Features...)
	for i := range c.Features {
		if f := &c.Features[i]; f.Missing == "" || f.Missing == schema.MissingError {
			f.Missing = schema.MissingDrop
		}
	}
	if c.Target.Missing == "" || c.Target.Missing == schema.MissingError {
		c.Target.Missing = schema.MissingDrop
	}
	return &c, nil
}
