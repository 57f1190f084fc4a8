package main

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/regress"
)

// addMechanismFlags defines a flag for every mechanism option of the
// registry (regress.Options: name, help and default are the registry's)
// and returns where each value lands, by flag.
func addMechanismFlags(cmd *cobra.Command) map[string]any {
	f := cmd.Flags()
	vals := map[string]any{}
	for _, op := range regress.Options() {
		switch d := op.Default.(type) {
		case float64:
			vals[op.Flag] = f.Float64(op.Flag, d, op.Help)
		case int:
			vals[op.Flag] = f.Int(op.Flag, d, op.Help)
		case string:
			vals[op.Flag] = f.String(op.Flag, d, op.Help)
		case bool:
			vals[op.Flag] = f.Bool(op.Flag, d, op.Help)
		default:
			panic(fmt.Sprintf("regress option %s has a default of type %T", op.Flag, d))
		}
	}
	return vals
}

// applyMechanismFlags sets every mechanism option's flag value (its
// default when not given) in cfg.
func applyMechanismFlags(cfg *regress.Config, vals map[string]any) error {
	for _, op := range regress.Options() {
		var v any
		switch p := vals[op.Flag].(type) {
		case *float64:
			v = *p
		case *int:
			v = *p
		case *string:
			v = *p
		case *bool:
			v = *p
		default:
			return fmt.Errorf("--%s: no value", op.Flag)
		}
		if err := op.Apply(cfg, v); err != nil {
			return err
		}
	}
	return nil
}

// checkFitFlags refuses, in the words of the flags, combinations that make
// no sense, before any data is read: a model the mechanism does not fit,
// a privacy parameter a reference fit would ignore, a δ a pure mechanism
// would ignore or one outside (0, 1), and mechanism-specific flags given to
// another mechanism.
func checkFitFlags(cmd *cobra.Command, o fitOptions, kind regress.Kind) error {
	u, ok := regress.LookupMechanism(o.mechanism)
	if !ok {
		return fmt.Errorf("--mechanism %q: want one of %s", o.mechanism, strings.Join(regress.Mechanisms(), ", "))
	}
	changed := cmd.Flags().Changed
	if !slices.Contains(u.Kinds, kind) {
		return fmt.Errorf("--model %s cannot be fitted by --mechanism %s; for --model %s use --mechanism %s", kind, o.mechanism, kind, strings.Join(regress.MechanismsFor(kind), ", "))
	}
	epsilon := u.Privacy.TakesEpsilon()
	sigmaGiven := u.EpsilonOr != "" && changed(u.EpsilonOr)
	switch {
	case !epsilon && changed("epsilon"):
		return fmt.Errorf("--epsilon: --mechanism %s adds no noise and has no privacy parameter (it is a non-private reference fit); drop --epsilon, or choose a private mechanism", o.mechanism)
	case epsilon && !changed("epsilon") && !sigmaGiven:
		return fmt.Errorf("--mechanism %s needs --epsilon (the privacy parameter ε > 0, e.g. --epsilon 1)", o.mechanism)
	case epsilon && changed("epsilon") && (!(o.epsilon > 0) || math.IsInf(o.epsilon, 0)):
		return fmt.Errorf("--epsilon must be a finite number > 0, got %v", o.epsilon)
	}
	switch {
	case !u.Privacy.TakesDelta() && changed("delta") && !epsilon:
		return fmt.Errorf("--delta: --mechanism %s adds no noise and has no privacy parameter; drop --delta", o.mechanism)
	case !u.Privacy.TakesDelta() && changed("delta"):
		return fmt.Errorf("--delta: --mechanism %s is pure ε-DP and takes no δ; drop --delta, or use gaussian-fm for (ε, δ)-DP", o.mechanism)
	case u.Privacy.NeedsDelta() && !changed("delta"):
		return fmt.Errorf("--mechanism %s needs --delta (δ > 0, well below 1/N, e.g. --delta 1e-6)", o.mechanism)
	case changed("delta") && (!(o.delta > 0) || !(o.delta < 1)):
		return fmt.Errorf("--delta must be in (0, 1) and well below 1/N (e.g. 1e-6), got %v", o.delta)
	}
	if err := checkFlagRanges(cmd); err != nil {
		return err
	}
	for _, op := range regress.Options() {
		if changed(op.Flag) && !u.Reads(op.Flag) {
			return fmt.Errorf("--%s is read only by --mechanism %s, not by %s; drop it", op.Flag, strings.Join(regress.ReadersOf(op.Flag), ", "), o.mechanism)
		}
	}
	return nil
}

// checkDeltaN refuses a δ that is not below 1/N: such a guarantee permits
// publishing a whole record with probability δ.
func checkDeltaN(delta float64, n int64) error {
	if delta > 0 && n > 0 && delta >= 1/float64(n) {
		return fmt.Errorf("--delta %g is not below 1/N = %g (N = %s): an (ε, δ) guarantee with δ ≥ 1/N permits publishing a whole record with probability δ; choose δ well below 1/N, e.g. %g",
			delta, 1/float64(n), dataset.Plural(n, "row"), suggestDelta(n))
	}
	return nil
}

// suggestDelta returns 1/(10·N) rounded down to a power of ten: a common
// choice of δ for N rows.
func suggestDelta(n int64) float64 {
	return math.Pow(10, math.Floor(math.Log10(1/(10*float64(n)))))
}

// flagRange is the accepted range of a numeric fit flag given explicitly;
// zero, where the help says it means the default, is always accepted.
type flagRange struct {
	lo, hi         float64 // bounds
	loOpen, hiOpen bool    // exclude the bound
	zeroDefault    bool    // 0 means "the default"
	what           string  // the range in words
}

var fitFlagRanges = map[string]flagRange{
	"split":                {lo: 0, hi: 1, loOpen: true, hiOpen: true, what: "in (0, 1)"},
	"lambda-factor":        {lo: 0, hi: math.MaxFloat64, what: "≥ 0"},
	"lambda":               {lo: math.Inf(-1), hi: math.MaxFloat64, what: "finite (negative: the default)"},
	"objpert-lambda":       {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"radius":               {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"objpert-tolerance":    {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"objpert-output-share": {lo: 0, hi: 1, loOpen: true, hiOpen: true, zeroDefault: true, what: "in (0, 1) (0: the default)"},
	"iterations":           {lo: 1, hi: 1e7, zeroDefault: true, what: "from 1 to 10⁷ (0: the default)"},
	"sigma":                {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: solve for it from --epsilon)"},
	"batch-rate":           {lo: 0, hi: 1, loOpen: true, zeroDefault: true, what: "in (0, 1] (0 or 1: full batch)"},
	"learning-rate":        {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"gd-ridge":             {lo: 0, hi: math.MaxFloat64, what: "≥ 0"},
	"irls-iterations":      {lo: 1, hi: 1e7, zeroDefault: true, what: "from 1 to 10⁷ (0: the default)"},
	"residual-floor":       {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"irls-warm-start":      {lo: math.Inf(-1), hi: 1, hiOpen: true, what: "below 1 (0: the default; negative: cold start)"},
	"logistic-range":       {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"solve-radius":         {lo: 0, hi: math.MaxFloat64, what: "≥ 0 (0: unconstrained)"},
	"irls-split":           {lo: 0, hi: 1, loOpen: true, hiOpen: true, zeroDefault: true, what: "in (0, 1) (0: the default)"},
	"workers":              {lo: 0, hi: 1 << 16, what: "from 0 (all cores) to 65536"},
}

// checkFlagRanges refuses, naming the flag, a numeric flag given outside
// its range, before the estimator would refuse it in its own terms.
func checkFlagRanges(cmd *cobra.Command) error {
	for name, r := range fitFlagRanges {
		f := cmd.Flags().Lookup(name)
		if f == nil || !f.Changed {
			continue
		}
		var v float64
		switch f.Value.Type() {
		case "int":
			n, _ := cmd.Flags().GetInt(name)
			v = float64(n)
		default:
			v, _ = cmd.Flags().GetFloat64(name)
		}
		if r.zeroDefault && v == 0 {
			continue
		}
		bad := math.IsNaN(v) || math.IsInf(v, 0) || v < r.lo || v > r.hi || (r.loOpen && v == r.lo) || (r.hiOpen && v == r.hi)
		if bad {
			return fmt.Errorf("--%s must be %s, got %v", name, r.what, v)
		}
	}
	return nil
}
