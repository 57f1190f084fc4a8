package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// loadSchemaFlag reads the --schema file ("-": stdin), saying so when it is
// a model file rather than a schema.
func loadSchemaFlag(path string, stdin io.Reader) (*schema.Schema, error) {
	data, err := readInput(path, stdin)
	if err != nil {
		return nil, fmt.Errorf("--schema: %w", err)
	}
	var probe map[string]json.RawMessage
	if json.Unmarshal(data, &probe) == nil {
		if _, ok := probe["format"]; ok {
			if _, ok := probe["coefficients"]; ok {
				return nil, fmt.Errorf("--schema %s: this is a model file written by 'dplearn fit'; --schema wants the schema file (the model's own schema is under its \"schema\" key)", path)
			}
		}
	}
	s, err := schema.Parse(data)
	if err != nil {
		return nil, fmt.Errorf("--schema %s: %w", path, err)
	}
	return s, nil
}

// openFitLedger opens the --ledger file and refuses early, before any data
// is read, a fit whose requested (ε, δ) clearly does not fit in what is
// left. The exact check is the charge itself (chargeFit), made with the
// guarantee the fit achieved before the model is written.
func openFitLedger(ctx context.Context, o fitOptions, req fit.Request) (*ledger.Ledger, error) {
	if !req.Private() {
		return nil, fmt.Errorf("--ledger: --mechanism %s releases a model with no privacy guarantee; a budget cannot account for it (fit without --ledger, and do not release it)", o.mechanism)
	}
	if o.seeded {
		return nil, fmt.Errorf("--ledger with --seed: seeded noise is predictable, so the model has no privacy guarantee to charge; drop --seed for a release")
	}
	if _, err := os.Stat(o.ledger); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("--ledger %s: no such ledger; create it first: dplearn ledger create %s --name NAME --epsilon E --delta D", o.ledger, o.ledger)
	}
	l, err := ledger.Open(o.ledger)
	if err != nil {
		return nil, fmt.Errorf("--ledger %s: %w", o.ledger, err)
	}
	st, err := l.State(ctx)
	if err != nil {
		return nil, fmt.Errorf("--ledger %s: %w", o.ledger, err)
	}
	if err := fit.CheckBudget(req, st); err != nil {
		return nil, fmt.Errorf("--ledger %s: %w", o.ledger, err)
	}
	return l, nil
}

// chargeFit charges the model's guarantee (the computed ε, δ, or ρ for a
// zCDP ledger when the accountant reports one) to the ledger; an error
// means nothing was charged and the model must not be written. It returns
// the charge in words, for messages.
func chargeFit(ctx context.Context, l *ledger.Ledger, o fitOptions, m *regress.Model) (string, error) {
	p := m.Privacy
	st, err := l.State(ctx)
	if err != nil {
		return "", fmt.Errorf("--ledger %s: %w", o.ledger, err)
	}
	c := fit.LedgerCharge(p, st.Budget)
	spent := fmt.Sprintf("ε = %s, δ = %s", report.Up(c.Epsilon), report.Up(c.Delta))
	if c.Rho > 0 {
		spent = fmt.Sprintf("ρ = %s", report.Up(c.Rho))
	}
	label := fmt.Sprintf("dplearn fit --mechanism %s --model %s of %q on %s (%s) → %s", o.mechanism, m.Kind, m.Schema.Target.Name, displayPath(o.data), dataset.Plural(m.Training.Rows, "row"), displayPath(o.out))
	if _, err := l.Charge(ctx, label, c); err != nil {
		return "", fmt.Errorf("--ledger %s: the fit was refused and no model written: %w", o.ledger, err)
	}
	return fmt.Sprintf("%s (charge %q)", spent, label), nil
}

// publishModel writes the model and charges it, in the order that never
// leaves a charge without a model except on a crash in one instant:
//
//  1. write the model to the output's temporary file and fsync it (a full
//     disk fails here: nothing charged, the temporary file removed);
//  2. charge the ledger (over budget: nothing charged, the temporary file
//     removed);
//  3. rename the temporary file into place and fsync the directory.
//
// Only a crash between 2 and 3 leaves a charge without a model (the model
// is then in the temporary file .NAME.tmp*, until a later run for the same
// --out removes it); a rename that fails keeps the temporary file and the
// message names it and what was charged. An output that cannot be renamed
// into place (standard output, a pipe, a device) is charged first and
// written after, so that nothing is released unpaid; a failed write then
// says what was charged.
func publishModel(ctx context.Context, m *regress.Model, out *outputFile, l *ledger.Ledger, o fitOptions) error {
	if !out.atomic() {
		spent := ""
		if l != nil {
			var err error
			if spent, err = chargeFit(ctx, l, o, m); err != nil {
				out.Abort()
				return err
			}
		}
		if err := saveModel(m, out); err != nil {
			if l != nil {
				return fmt.Errorf("--out: %w; the ledger %s was charged %s for this model", err, o.ledger, spent)
			}
			return fmt.Errorf("--out: %w", err)
		}
		return nil
	}
	if err := writeModel(m, out); err != nil {
		if l != nil {
			return fmt.Errorf("--out: %w; nothing was charged to the ledger %s", err, o.ledger)
		}
		return fmt.Errorf("--out: %w", err)
	}
	if l == nil {
		return out.Commit()
	}
	spent, err := chargeFit(ctx, l, o, m)
	if err != nil {
		out.Abort()
		return err
	}
	if err := out.commitKeep(); err != nil {
		return fmt.Errorf("--out: %w; the ledger %s was charged %s for this model", err, o.ledger, spent)
	}
	return nil
}

// displayPath names a file flag's value for a label: "-" is stdin/stdout.
func displayPath(p string) string {
	if p == "-" {
		return "(standard stream)"
	}
	return filepath.Base(p)
}
