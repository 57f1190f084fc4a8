package fit

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// given reports whether the parameter (epsilon, delta or an option's
// flag) was given explicitly (Request.Given).
func (r Request) given(name string) bool {
	if r.Given != nil {
		return r.Given[name]
	}
	switch name {
	case "epsilon":
		return r.Epsilon != 0
	case "delta":
		return r.Delta != 0
	}
	v, ok := r.Options[name]
	if !ok {
		return false
	}
	for _, op := range regress.Options() {
		if op.Flag == name {
			return v != op.Default
		}
	}
	return true
}

// Check refuses, before any data is read, a request that makes no sense:
// an unknown mechanism, a model the mechanism does not fit, a privacy
// parameter a reference fit would ignore, a δ a pure mechanism would
// ignore or one outside (0, 1), an option outside its range or given to a
// mechanism that does not read it, a CIShare outside [0, 1) and an unknown
// Cov (or HC1 for a private fit).
func Check(r Request) error {
	_, u, err := estimator(r.Mechanism)
	if err != nil {
		return err
	}
	if !slices.Contains(u.Kinds, r.Kind) {
		return fmt.Errorf("--model %s cannot be fitted by --mechanism %s; for --model %s use --mechanism %s", r.Kind, r.Mechanism, r.Kind, strings.Join(regress.MechanismsFor(r.Kind), ", "))
	}
	epsilon := u.Privacy.TakesEpsilon()
	sigmaGiven := u.EpsilonOr != "" && r.given(u.EpsilonOr)
	switch {
	case !epsilon && r.given("epsilon"):
		return fmt.Errorf("--epsilon: --mechanism %s adds no noise and has no privacy parameter (it is a non-private reference fit); drop --epsilon, or choose a private mechanism", r.Mechanism)
	case epsilon && !r.given("epsilon") && !sigmaGiven:
		return fmt.Errorf("--mechanism %s needs --epsilon (the privacy parameter ε > 0, e.g. --epsilon 1)", r.Mechanism)
	case epsilon && r.given("epsilon") && (!(r.Epsilon > 0) || math.IsInf(r.Epsilon, 0)):
		return fmt.Errorf("--epsilon must be a finite number > 0, got %v", r.Epsilon)
	}
	switch {
	case !u.Privacy.TakesDelta() && r.given("delta") && !epsilon:
		return fmt.Errorf("--delta: --mechanism %s adds no noise and has no privacy parameter; drop --delta", r.Mechanism)
	case !u.Privacy.TakesDelta() && r.given("delta"):
		return fmt.Errorf("--delta: --mechanism %s is pure ε-DP and takes no δ; drop --delta, or use gaussian-fm for (ε, δ)-DP", r.Mechanism)
	case u.Privacy.NeedsDelta() && !r.given("delta"):
		return fmt.Errorf("--mechanism %s needs --delta (δ > 0, well below 1/N, e.g. --delta 1e-6)", r.Mechanism)
	case r.given("delta") && (!(r.Delta > 0) || !(r.Delta < 1)):
		return fmt.Errorf("--delta must be in (0, 1) and well below 1/N (e.g. 1e-6), got %v", r.Delta)
	}
	if err := r.checkRanges(); err != nil {
		return err
	}
	for _, op := range regress.Options() {
		if r.given(op.Flag) && !u.Reads(op.Flag) {
			return fmt.Errorf("--%s is read only by --mechanism %s, not by %s; drop it", op.Flag, strings.Join(regress.ReadersOf(op.Flag), ", "), r.Mechanism)
		}
	}
	if hasIntervals(r.Mechanism) {
		if err := checkCIShare(r.CIShare); err != nil {
			return err
		}
	}
	if err := checkIntervals(r); err != nil {
		return err
	}
	return checkCov(r.Mechanism, r.Cov)
}

// CheckTarget verifies that the schema's target suits the model: a binary
// label for logistic regression, a declared range otherwise.
func CheckTarget(kind regress.Kind, s *schema.Schema) error {
	switch {
	case kind == regress.Logistic && !s.Target.Binary():
		return fmt.Errorf("--model logistic needs a binary target; the schema gives %q a range (declare \"positive\" instead)", s.Target.Name)
	case kind != regress.Logistic && s.Target.Binary():
		return fmt.Errorf("--model %s needs a continuous target: the schema's target %q has no \"range\"; declare its public bounds as \"range\": [lo, hi] (without a range a target is read as a binary label, for --model logistic)", kind, s.Target.Name)
	}
	return nil
}

// checkCIShare refuses a share of ε for the intervals outside [0, 1).
func checkCIShare(share float64) error {
	if math.IsNaN(share) || share < 0 || share >= 1 {
		return fmt.Errorf("--ci-share must be in [0, 1), got %v", share)
	}
	return nil
}

// checkCov refuses an unknown covariance, and HC1 for a private fit.
func checkCov(mechanism, cov string) error {
	switch cov {
	case "", regress.CovNonrobust:
	case regress.CovHC1:
		if mechanism != "nonprivate" {
			return fmt.Errorf("--cov HC1 is for the classical summary of --mechanism nonprivate; the private fits' intervals come from their mechanism's noise (see docs/inference.md)")
		}
	default:
		return fmt.Errorf("--cov must be nonrobust or HC1, got %q", cov)
	}
	return nil
}

// optionRange is the accepted range of a numeric option given explicitly;
// zero, where the help says it means the default, is always accepted.
type optionRange struct {
	lo, hi         float64 // bounds
	loOpen, hiOpen bool    // exclude the bound
	zeroDefault    bool    // 0 means "the default"
	what           string  // the range in words
}

var optionRanges = map[string]optionRange{
	"split":                {lo: 0, hi: 1, loOpen: true, hiOpen: true, what: "in (0, 1)"},
	"lambda-factor":        {lo: 0, hi: math.MaxFloat64, what: "≥ 0"},
	"lambda":               {lo: math.Inf(-1), hi: math.MaxFloat64, what: "finite (negative: the default)"},
	"objpert-lambda":       {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"radius":               {lo: 0, hi: math.MaxFloat64, loOpen: true, zeroDefault: true, what: "> 0 (0: the default)"},
	"huber":                {lo: math.Inf(-1), hi: math.MaxFloat64, what: "finite (0: the default rule; negative: the squared loss)"},
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
}

// checkRanges refuses, naming the option, a numeric option given outside
// its range, before the estimator would refuse it in its own terms.
func (r Request) checkRanges() error {
	names := make([]string, 0, len(optionRanges))
	for name := range optionRanges {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		rg := optionRanges[name]
		if !r.given(name) {
			continue
		}
		var v float64
		switch x := r.Options[name].(type) {
		case int:
			v = float64(x)
		case float64:
			v = x
		default:
			continue // Apply refuses the wrong type
		}
		if rg.zeroDefault && v == 0 {
			continue
		}
		bad := math.IsNaN(v) || math.IsInf(v, 0) || v < rg.lo || v > rg.hi || (rg.loOpen && v == rg.lo) || (rg.hiOpen && v == rg.hi)
		if bad {
			return fmt.Errorf("--%s must be %s, got %v", name, rg.what, v)
		}
	}
	return nil
}

// CheckBudget refuses early, before any data is read, a private request
// whose (ε, δ) clearly does not fit in what a ledger has left, and a
// request with no ρ to charge to a zCDP ledger. The exact check is the
// charge itself (LedgerCharge), made with the guarantee the fit achieved.
func CheckBudget(r Request, st ledger.State) error {
	spent, b := st.Spent(), st.Budget
	if b.IsZCDP() {
		m, ok := regress.LookupMechanism(r.Mechanism)
		if !ok {
			return fmt.Errorf("unknown mechanism %q", r.Mechanism)
		}
		cfg, err := r.optionConfig()
		if err != nil {
			return err
		}
		if !m.StatesRho(cfg) {
			with := ""
			if m.StatesRho(regress.Config{}) {
				with = " with these options"
			}
			return fmt.Errorf("ledger %q is a zCDP (ρ) budget, and --mechanism %s%s states an (ε, δ) guarantee that has no ρ to charge (a ρ ledger takes %s); use an (ε, δ) ledger (dplearn ledger create FILE --epsilon E --delta D)",
				st.Name, r.Mechanism, with, strings.Join(regress.RhoMechanisms(), ", "))
		}
	}
	if !b.IsZCDP() && st.ClearlyExceeds(ledger.Charge{Epsilon: r.Epsilon, Delta: r.Delta}) {
		return fmt.Errorf("refused before reading the data: this fit asks for ε = %g, δ = %g but the ledger %q has spent ε = %g of %g and δ = %g of %g",
			r.Epsilon, r.Delta, st.Name, spent.Epsilon, b.Epsilon, spent.Delta, b.Delta)
	}
	return nil
}

// LedgerCharge is what a fit with privacy report p costs a ledger with
// budget b: its ρ for a zCDP ledger when the accountant reports one, its
// (ε, δ) otherwise.
func LedgerCharge(p report.Privacy, b ledger.Budget) ledger.Charge {
	if b.IsZCDP() && p.Rho > 0 {
		return ledger.Charge{Rho: p.Rho}
	}
	return ledger.Charge{Epsilon: p.Epsilon, Delta: p.Delta}
}
