package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/describe"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

type suggestFlags struct {
	data, out, ledger, target, delimiter string
	epsilon, delta, coverage             float64
	categorical, ignore                  []string
	levels, transforms, outer            []string
	force                                bool
	seed                                 uint64
}

func newSchemaSuggestCmd() *cobra.Command {
	var o suggestFlags
	cmd := &cobra.Command{
		Use:   "suggest --data FILE --epsilon E [--delta D] [--ledger L] [--target COL] --out SCHEMA.json",
		Short: "Write a schema whose bounds are estimated with differential privacy",
		Long: `suggest reads --data and writes a schema whose numeric ranges are DP
quantiles (by default the 0.25th and 99.75th percentiles, by the exponential
mechanism on a public grid) and whose category lists are DP counts of each
candidate level (a public list given with --levels, or, with --delta > 0,
the levels in the data whose noisy count passes a threshold set by δ). The
release costs (--epsilon, --delta), charged to --ledger; every estimated bound
carries an "estimated" note, and the command prints what each column spent.

What is public, and given by you: which columns are categorical
(--categorical; all others are numeric), transforms (--transform wage=log),
outer bounds that restrict a numeric column's grid (--outer wage=1:100000,
in the column's own units; strongly advised: without one the default grid
spans ±1e9 and the bounds come out wide at small ε), candidate levels
(--levels region=north,south). See docs/describe.md.`,
		Example: `  dplearn schema suggest --data cps.csv --epsilon 0.1 --target wage --transform wage=log \
      --outer wage=1:100000 --outer education=0:30 --outer experience=-20:100 \
      --categorical ethnicity,smsa,region,parttime --levels smsa=no,yes --delta 1e-6 --out cps.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runSchemaSuggest(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "table: CSV, CSV.gz or Parquet")
	f.Float64Var(&o.epsilon, "epsilon", 0, "privacy budget ε of the whole suggestion")
	f.Float64Var(&o.delta, "delta", 0, "δ, needed only for categorical columns without --levels")
	f.StringVar(&o.ledger, "ledger", "", "privacy ledger to charge (see 'dplearn ledger')")
	f.StringVar(&o.target, "target", "", "the column to predict (default: a placeholder to fill in)")
	f.StringVar(&o.out, "out", "-", "where to write the schema (- for standard output)")
	f.StringSliceVar(&o.categorical, "categorical", nil, "categorical columns (comma-separated; all others are numeric)")
	f.StringSliceVar(&o.ignore, "ignore", nil, "columns to leave out (identifiers)")
	f.StringArrayVar(&o.levels, "levels", nil, "public candidate levels of a categorical column: COL=a,b,c (repeatable)")
	f.StringArrayVar(&o.transforms, "transform", nil, "transform of a numeric column: COL=log|log1p|sqrt (repeatable)")
	f.StringArrayVar(&o.outer, "outer", nil, "public outer bound of a numeric column, in its own units: COL=LO:HI (repeatable)")
	f.Float64Var(&o.coverage, "coverage", 0.995, "share of each numeric column the range aims to hold")
	f.StringVar(&o.delimiter, "delimiter", ",", "CSV field delimiter: ',', ';', tab or '|'")
	f.BoolVar(&o.force, "force", false, "replace an existing --out file")
	f.Uint64Var(&o.seed, "seed", 0, "use a deterministic INSECURE generator with this seed (tests only)")
	return cmd
}

// parseAssignments parses COL=VALUE flags.
func parseAssignments(flag string, vals []string) (map[string]string, error) {
	out := map[string]string{}
	for _, v := range vals {
		k, val, ok := strings.Cut(v, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" || val == "" {
			return nil, fmt.Errorf("%s %q: want COLUMN=VALUE", flag, v)
		}
		if _, dup := out[k]; dup {
			return nil, fmt.Errorf("%s: column %q given twice", flag, k)
		}
		out[k] = val
	}
	return out, nil
}

func (o suggestFlags) options() (describe.SuggestOptions, error) {
	opt := describe.SuggestOptions{Epsilon: o.epsilon, Delta: o.delta, Target: o.target, Coverage: o.coverage,
		Categorical: o.categorical, Ignore: o.ignore,
		Levels: map[string][]string{}, Transforms: map[string]schema.Transform{}, Outer: map[string][2]float64{}}
	lv, err := parseAssignments("--levels", o.levels)
	if err != nil {
		return opt, err
	}
	for k, v := range lv {
		var ls []string
		for _, l := range strings.Split(v, ",") {
			if l = strings.TrimSpace(l); l != "" && !slices.Contains(ls, l) {
				ls = append(ls, l)
			}
		}
		opt.Levels[k] = ls
	}
	tr, err := parseAssignments("--transform", o.transforms)
	if err != nil {
		return opt, err
	}
	for k, v := range tr {
		t := schema.Transform(v)
		switch t {
		case schema.TransformLog, schema.TransformLog1p, schema.TransformSqrt:
		default:
			return opt, fmt.Errorf("--transform %s=%s: want log, log1p or sqrt", k, v)
		}
		opt.Transforms[k] = t
	}
	ob, err := parseAssignments("--outer", o.outer)
	if err != nil {
		return opt, err
	}
	for k, v := range ob {
		a, b, ok := strings.Cut(v, ":")
		lo, err1 := strconv.ParseFloat(strings.TrimSpace(a), 64)
		hi, err2 := strconv.ParseFloat(strings.TrimSpace(b), 64)
		if !ok || err1 != nil || err2 != nil || !(lo < hi) || isInf(lo) || isInf(hi) {
			return opt, fmt.Errorf("--outer %s=%s: want LO:HI with finite LO < HI", k, v)
		}
		opt.Outer[k] = [2]float64{lo, hi}
	}
	return opt, nil
}

func isInf(v float64) bool { return v > 1e308 || v < -1e308 || v != v }

func runSchemaSuggest(cmd *cobra.Command, o suggestFlags) error {
	ctx := cmd.Context()
	if err := requireFlags(cmd, "data", "epsilon"); err != nil {
		return err
	}
	seeded := cmd.Flags().Changed("seed")
	opt, err := o.options()
	if err != nil {
		return err
	}
	if err := refuseSameFile([]fileFlag{{"--out", o.out}}, []fileFlag{{"--data", o.data}, {"--ledger", o.ledger}}); err != nil {
		return err
	}
	if o.out != "-" && !o.force {
		if _, err := os.Lstat(o.out); err == nil {
			return fmt.Errorf("--out %s exists (it may be a schema you filled in): pass --force to replace it, or choose another name", o.out)
		}
	}
	sep, err := parseDelimiter(o.delimiter)
	if err != nil {
		return err
	}
	var l *ledger.Ledger
	if o.ledger != "" {
		if l, err = openSpendLedger(ctx, o.ledger, o.epsilon, o.delta, seeded); err != nil {
			return err
		}
	}
	out, err := openCheckedOutput("--out", o.out, cmd.OutOrStdout(), fileFlag{"--data", o.data}, fileFlag{"--ledger", o.ledger})
	if err != nil {
		return err
	}
	var sg *describe.Suggester
	err = describe.ReadRaw(ctx, o.data, dataset.Options{Delimiter: sep, Stdin: cmd.InOrStdin()}, func(h, f []string) error {
		if f == nil {
			var err error
			sg, err = describe.NewSuggester(h, opt)
			return err
		}
		return sg.Add(f)
	})
	if err != nil {
		out.Abort()
		return readErr("--data", err)
	}
	res, err := sg.Suggest(randomSource(seeded, o.seed))
	if err != nil {
		out.Abort()
		return err
	}
	doc, err := res.Marshal()
	if err != nil {
		out.Abort()
		return err
	}
	if o.target == "" {
		doc = withTargetPlaceholder(doc)
	}
	label := fmt.Sprintf("dplearn schema suggest on %s → %s", displayPath(o.data), displayPath(o.out))
	if err := publishCharged(ctx, out, doc, l, o.ledger, label, res.Epsilon, res.Delta); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if o.out == "-" {
		w = cmd.ErrOrStderr()
	}
	return printSuggestReport(w, res, o)
}

// withTargetPlaceholder replaces the empty target of a suggestion made
// without --target by schema init's placeholder.
func withTargetPlaceholder(doc []byte) []byte {
	s := string(doc)
	i := strings.Index(s, "\"target\": ")
	j := strings.Index(s, ",\n \"features\"")
	if i < 0 || j < i {
		return doc
	}
	ph := fmt.Sprintf("\"target\": {\"name\": %q, \"todo\": %q}", todoPickTarget, "choose the column to predict, put its name here and move its feature entry's bounds here; "+todoTarget)
	return []byte(s[:i] + ph + s[j:])
}

func printSuggestReport(w io.Writer, res *describe.Suggestion, o suggestFlags) error {
	if o.out != "-" {
		fmt.Fprintf(w, "Wrote a schema with DP-estimated bounds to %s (each bound is marked \"estimated\").\n", o.out)
	}
	fmt.Fprintf(w, "Privacy: (ε = %s, δ = %s)-DP; neighbouring tables differ in one record replaced (the number of records is public).\n", report.Up(res.Epsilon), report.Up(res.Delta))
	fmt.Fprintf(w, "Composition: %s.\n", res.Accountant)
	fmt.Fprintf(w, "Noise: %s.\n", res.Noise)
	cols, err := res.PerColumn()
	if err != nil {
		return err
	}
	fmt.Fprintln(w, "Spent per column:")
	for _, c := range cols {
		fmt.Fprintf(w, "  %-16s ε = %s", c.Column, report.Up(c.Epsilon))
		if c.Delta > 0 {
			fmt.Fprintf(w, ", δ = %s", report.Up(c.Delta))
		}
		for _, p := range c.Parts {
			fmt.Fprintf(w, "; %s %s", p.What, report.Up(p.Epsilon))
		}
		fmt.Fprintln(w)
	}
	if o.ledger != "" {
		fmt.Fprintf(w, "Charged to the ledger %s.\n", o.ledger)
	}
	return nil
}

// openSpendLedger opens --ledger for a release of at most (ε, δ) by
// 'schema suggest' or 'describe' and refuses early, before the data is
// read, a request that clearly does not fit (as openFitLedger does for a
// fit). These releases report (ε, δ), so a zCDP ledger is refused.
func openSpendLedger(ctx context.Context, path string, eps, delta float64, seeded bool) (*ledger.Ledger, error) {
	if seeded {
		return nil, fmt.Errorf("--ledger with --seed: seeded noise is predictable, so the release has no privacy guarantee to charge; drop --seed for a release")
	}
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("--ledger %s: no such ledger; create it first: dplearn ledger create %s --name NAME --epsilon E --delta D", path, path)
	}
	l, err := ledger.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--ledger %s: %w", path, err)
	}
	st, err := l.State(ctx)
	if err != nil {
		return nil, fmt.Errorf("--ledger %s: %w", path, err)
	}
	if st.Budget.IsZCDP() {
		return nil, fmt.Errorf("--ledger %s: ledger %q is a zCDP (ρ) budget; this release reports an (ε, δ) guarantee: use an (ε, δ) ledger", path, st.Name)
	}
	if st.ClearlyExceeds(ledger.Charge{Epsilon: eps, Delta: delta}) {
		spent, b := st.Spent(), st.Budget
		return nil, fmt.Errorf("--ledger %s: refused before reading the data: this asks for ε = %g, δ = %g but the ledger %q has spent ε = %g of %g and δ = %g of %g",
			path, eps, delta, st.Name, spent.Epsilon, b.Epsilon, spent.Delta, b.Delta)
	}
	return l, nil
}

// publishCharged writes data to out and charges (ε, δ) to l under label,
// in publishModel's order: write and fsync the temporary file, charge,
// rename; an output that cannot be renamed into place is charged first and
// written after. With l nil it only writes.
func publishCharged(ctx context.Context, out *outputFile, data []byte, l *ledger.Ledger, ledgerPath, label string, eps, delta float64) error {
	charge := func() (string, error) {
		if _, err := l.Charge(ctx, label, ledger.Charge{Epsilon: eps, Delta: delta}); err != nil {
			return "", fmt.Errorf("--ledger %s: refused, nothing written: %w", ledgerPath, err)
		}
		return fmt.Sprintf("ε = %s, δ = %s", report.Up(eps), report.Up(delta)), nil
	}
	write := func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	}
	if !out.atomic() {
		spent := ""
		if l != nil {
			var err error
			if spent, err = charge(); err != nil {
				out.Abort()
				return err
			}
		}
		if err := write(out); err != nil {
			out.Abort()
			if l != nil {
				return fmt.Errorf("--out: %w; the ledger %s was charged %s for it", err, ledgerPath, spent)
			}
			return fmt.Errorf("--out: %w", err)
		}
		return out.Commit()
	}
	if err := write(out); err != nil {
		out.Abort()
		return fmt.Errorf("--out: %w; nothing was charged", err)
	}
	if err := out.Prepare(); err != nil {
		return fmt.Errorf("--out: %w; nothing was charged", err)
	}
	if l == nil {
		return out.Commit()
	}
	spent, err := charge()
	if err != nil {
		out.Abort()
		return err
	}
	if err := out.commitKeep(); err != nil {
		return fmt.Errorf("--out: %w; the ledger %s was charged %s for it", err, ledgerPath, spent)
	}
	return nil
}
