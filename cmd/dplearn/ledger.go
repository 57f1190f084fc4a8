package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/report"
)

// newLedgerCmd builds the ledger commands (create, charge, show): both
// `dplearn ledger` and `dplearn privacy ledger` (prefix: how the examples
// call it). The file is the first argument or --file.
func newLedgerCmd(prefix string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "A privacy budget persisted to a file",
		Long: `ledger keeps a named privacy budget in a JSON file and records every release
charged against it. Charges are atomic and safe across processes (file lock,
write to a temporary file, fsync, rename); a charge that would exceed the
budget is refused and not recorded (exit status 1). 'dplearn fit --ledger
FILE' charges each fit's guarantee once its model is on disk, just before
renaming it into place. A ledger reached through a symbolic link is the file
it points to (one lock, one budget); a ledger with more than one hard link
is refused, since each write would leave the other names on an old state.

A budget is either (ε, δ), composed by adding ε's and δ's, or ρ (zCDP),
composed by adding ρ's; pure ε charges on a ρ budget count ε²/2 (rounded up).
Sums are exact and compared with the budget without tolerance: the spent
total never exceeds the budget. Amounts are binary floating-point numbers, so
0.25, 0.5 or 0.125 add up exactly, while 0.1 is slightly more than 1/10 and
ten charges of 0.1 exceed a budget of 1 (the tenth is refused).

Example:
  ` + prefix + ` create site.json --name hospital-A --epsilon 1 --delta 1e-5
  ` + prefix + ` charge site.json --label "query 1" --epsilon 0.25 --delta 1e-6
  dplearn fit ... --ledger site.json
  ` + prefix + ` show site.json`,
	}
	var file string
	cmd.PersistentFlags().StringVar(&file, "file", "", "ledger file (or give it as the first argument)")
	fileArg := func(c *cobra.Command, args []string) error {
		if len(args) == 1 {
			if file != "" && file != args[0] {
				return fmt.Errorf("two ledger files: --file %s and %s", file, args[0])
			}
			file = args[0]
		}
		if file == "" {
			return fmt.Errorf("missing the ledger file: %s FILE (or --file FILE)", c.CommandPath())
		}
		return nil
	}
	budgetFlags := func(c *cobra.Command, b *ledger.Budget) {
		c.Flags().Float64Var(&b.Epsilon, "epsilon", 0, "ε")
		c.Flags().Float64Var(&b.Delta, "delta", 0, "δ")
		c.Flags().Float64Var(&b.Rho, "rho", 0, "ρ (zCDP)")
	}

	var name string
	var budget ledger.Budget
	create := &cobra.Command{Use: "create FILE", Short: "Create a ledger", Args: cobra.MaximumNArgs(1),
		Long: "create makes a new ledger file (it refuses to overwrite one).",
		Example: "  " + prefix + " create site.json --name hospital-A --epsilon 1 --delta 1e-5\n" +
			"  " + prefix + " create site.json --name hospital-A --rho 0.5"}
	createFormat := addFormatFlag(create)
	create.Flags().StringVar(&name, "name", "", "budget name")
	budgetFlags(create, &budget)
	create.RunE = func(c *cobra.Command, args []string) error {
		f, err := createFormat()
		if err != nil {
			return err
		}
		if err := fileArg(c, args); err != nil {
			return err
		}
		if err := requireFlags(c, "name"); err != nil {
			return err
		}
		if err := checkFlagRules(c, nonEmptyStringFlag("name")); err != nil {
			return err
		}
		if c.Flags().Changed("rho") && (c.Flags().Changed("epsilon") || c.Flags().Changed("delta")) {
			return fmt.Errorf("--rho with --epsilon/--delta: a ledger holds one kind of budget, (--epsilon, --delta) or --rho (zCDP)")
		}
		l, err := ledger.Create(c.Context(), file, name, budget)
		if err != nil {
			return fmt.Errorf("ledger create: %w", err)
		}
		st, err := l.State(c.Context())
		if err != nil {
			return err
		}
		return printLedger(c.OutOrStdout(), f, file, st)
	}

	var label string
	var cost ledger.Budget
	charge := &cobra.Command{Use: "charge FILE", Short: "Charge a release (refused if over budget)", Args: cobra.MaximumNArgs(1),
		Long:    "charge records one release's cost, or fails without recording it if the budget would be exceeded.",
		Example: "  " + prefix + " charge site.json --label q1 --epsilon 0.1 --delta 1e-7"}
	chargeFormat := addFormatFlag(charge)
	charge.Flags().StringVar(&label, "label", "", "what is released")
	budgetFlags(charge, &cost)
	charge.RunE = func(c *cobra.Command, args []string) error {
		f, err := chargeFormat()
		if err != nil {
			return err
		}
		if err := fileArg(c, args); err != nil {
			return err
		}
		if err := requireFlags(c, "label"); err != nil {
			return err
		}
		if err := checkFlagRules(c, nonEmptyStringFlag("label")); err != nil {
			return err // a charge nobody can tell from the others
		}
		l, err := openLedgerFile(file)
		if err != nil {
			return fmt.Errorf("ledger charge: %w", err)
		}
		st, err := l.Charge(c.Context(), label, ledger.Charge{Epsilon: cost.Epsilon, Delta: cost.Delta, Rho: cost.Rho})
		if err != nil {
			return fmt.Errorf("ledger charge: %w", err)
		}
		return printLedger(c.OutOrStdout(), f, file, st)
	}

	show := &cobra.Command{Use: "show FILE", Short: "Show the budget, what has been spent and what is left", Args: cobra.MaximumNArgs(1),
		Long:    "show prints the budget, the total spent (rounded up), what is left (rounded down) and every charge.",
		Example: "  " + prefix + " show site.json\n  " + prefix + " show site.json --format json"}
	showFormat := addFormatFlag(show)
	show.RunE = func(c *cobra.Command, args []string) error {
		f, err := showFormat()
		if err != nil {
			return err
		}
		if err := fileArg(c, args); err != nil {
			return err
		}
		l, err := openLedgerFile(file)
		if err != nil {
			return fmt.Errorf("ledger show: %w", err)
		}
		st, err := l.State(c.Context())
		if err != nil {
			return err
		}
		return printLedger(c.OutOrStdout(), f, file, st)
	}
	cmd.AddCommand(create, charge, show)
	return cmd
}

// printLedger prints a ledger with every figure labelled: spent amounts are
// rounded up and what is left rounded down (never overstate what remains);
// the budget is echoed exactly with %g.
func printLedger(w io.Writer, f outputFormat, file string, st ledger.State) error {
	spent, left := st.Spent(), st.Remaining()
	b := st.Budget
	if f == formatJSON {
		return writeJSON(w, map[string]any{"file": file, "name": st.Name, "zcdp": b.IsZCDP(),
			"budget_epsilon": b.Epsilon, "budget_delta": b.Delta, "budget_rho": b.Rho,
			"spent_epsilon": spent.Epsilon, "spent_delta": spent.Delta, "spent_rho": spent.Rho,
			"remaining_epsilon": left.Epsilon, "remaining_delta": left.Delta, "remaining_rho": left.Rho,
			"charges": len(st.Charges)})
	}
	fmt.Fprintf(w, "Privacy ledger %q (%s)\n", st.Name, file)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	if b.IsZCDP() {
		fmt.Fprintf(tw, "  budget:\tρ = %g\t(zCDP: the ρ of the charges add up)\n", b.Rho)
		fmt.Fprintf(tw, "  spent:\tρ = %s\t(rounded up)\n", report.Up(spent.Rho))
		fmt.Fprintf(tw, "  remaining:\tρ = %s\t(rounded down)\n", report.Down(left.Rho))
	} else {
		fmt.Fprintf(tw, "  budget:\tε = %g, δ = %g\t(basic composition: the ε and the δ of the charges add up)\n", b.Epsilon, b.Delta)
		fmt.Fprintf(tw, "  spent:\tε = %s, δ = %s\t(rounded up)\n", report.Up(spent.Epsilon), report.Up(spent.Delta))
		fmt.Fprintf(tw, "  remaining:\tε = %s, δ = %s\t(rounded down)\n", report.Down(left.Epsilon), report.Down(left.Delta))
	}
	tw.Flush()
	fmt.Fprintf(w, "  charges:     %d\n", len(st.Charges))
	if len(st.Charges) == 0 {
		return nil
	}
	tw = tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "    time (UTC)\tcost (rounded up)\tlabel")
	for _, c := range st.Charges {
		cost := fmt.Sprintf("ε = %s, δ = %s", report.Up(c.Epsilon), report.Up(c.Delta))
		if c.Rho > 0 {
			cost = fmt.Sprintf("ρ = %s", report.Up(c.Rho))
		}
		fmt.Fprintf(tw, "    %s\t%s\t%s\n", c.Time.UTC().Format(time.DateTime), cost, c.Label)
	}
	return tw.Flush()
}

// openLedgerFile opens a ledger, saying how to create a missing one.
func openLedgerFile(file string) (*ledger.Ledger, error) {
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s: no such ledger (create it: dplearn ledger create %s --name NAME --epsilon E --delta D)", file, file)
	}
	return ledger.Open(file)
}
