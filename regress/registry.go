package regress

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// PrivacyParams says which privacy parameters a mechanism takes.
type PrivacyParams int

const (
	// NoPrivacy: a non-private reference fit; it takes neither ε nor δ.
	NoPrivacy PrivacyParams = iota
	// PureEpsilon: ε-DP; it takes ε and refuses δ.
	PureEpsilon
	// EpsilonDelta: (ε, δ)-DP; it needs both.
	EpsilonDelta
	// EpsilonOptionalDelta: it takes ε and an optional δ (irls-wishart,
	// which is not DP at all: it only reproduces a figure of its seed).
	EpsilonOptionalDelta
)

// TakesEpsilon reports whether the mechanism reads ε.
func (p PrivacyParams) TakesEpsilon() bool { return p != NoPrivacy }

// TakesDelta reports whether the mechanism reads δ (needed or optional).
func (p PrivacyParams) TakesDelta() bool { return p == EpsilonDelta || p == EpsilonOptionalDelta }

// NeedsDelta reports whether the mechanism refuses to run without δ > 0.
func (p PrivacyParams) NeedsDelta() bool { return p == EpsilonDelta }

// Option is one public, typed option of a mechanism and its command-line
// flag. Default is the flag's default and fixes its type: float64, int,
// string or bool. Apply sets the option in a Config; applying the default
// leaves the mechanism at its documented default.
type Option struct {
	Flag    string
	Help    string
	Default any
	set     func(c *Config, v any)
}

// Apply sets the option's value v (of Default's type) in c.
func (o Option) Apply(c *Config, v any) error {
	if fmt.Sprintf("%T", v) != fmt.Sprintf("%T", o.Default) {
		return fmt.Errorf("regress: option %s takes a %T, got %T", o.Flag, o.Default, v)
	}
	o.set(c, v)
	return nil
}

// field is an Option stored in one Config field.
func field[T any](flag string, def T, help string, f func(*Config) *T) Option {
	return Option{Flag: flag, Help: help, Default: def, set: func(c *Config, v any) { *f(c) = v.(T) }}
}

// options are every mechanism option, by flag name; a Mechanism lists the
// ones it reads.
var options = []Option{
	field("lambda", -1.0, "ridge λ added to the noisy Λ2 (data-independent); negative: the mechanism's default",
		func(c *Config) *float64 { return &c.Lambda }),
	field("lambda-factor", DefaultLambdaFactor, "when --lambda is negative: λ = this × the per-entry noise std of Λ2",
		func(c *Config) *float64 { return &c.LambdaFactor }),
	field("eigen-floor", 0.0, "gaussian-fm (linear): floor the noisy Λ2's eigenvalues at this × τ2·√d instead of the ridge and trimming when --lambda is negative (0: default 2; negative: ridge --lambda-factor and trimming)",
		func(c *Config) *float64 { return &c.EigenFloor }),
	field("split", DefaultGaussianFMSplit, "gaussian-fm: share of the budget given to Λ1 (the rest to Λ2)",
		func(c *Config) *float64 { return &c.Split }),
	field("logistic-approx", ApproxTaylor, "fm, relaxed-fm, gaussian-fm (logistic): quadratic stand-in for log(1+e^z): taylor (the seed's), chebyshev or least-squares over |xᵀω| ≤ --logistic-range",
		func(c *Config) *string { return &c.LogisticApprox }),
	field("logistic-range", 0.0, "fm, relaxed-fm, gaussian-fm (logistic): public range R of xᵀω for chebyshev and least-squares (0: 4)",
		func(c *Config) *float64 { return &c.LogisticRange }),
	field("solve-radius", 0.0, "fm, relaxed-fm, gaussian-fm: minimise the noisy objective over the public ball ‖ω‖ ≤ R (0: unconstrained)",
		func(c *Config) *float64 { return &c.SolveRadius }),
	field("objpert-lambda", 0.0, "objpert: regularisation strength Λ (0: the documented default)",
		func(c *Config) *float64 { return &c.ObjPert.Lambda }),
	field("radius", 0.0, "objpert (linear, squared loss) and noisygd: public bound R on the encoded ‖ω‖ (0: default √d/2 for linear, none for noisygd's clipped logistic gradient and 2√d without the clip (--huber -1), d = number of encoded coefficients; the linear default is multiplied by max(1, (Nε/(1000d))^(1/4)), and by 2 for noisygd's Huber loss, where the ball is post-processing and grows further where the noise alone cannot walk to it: see the fit's ball note)",
		func(c *Config) *float64 { return &c.ObjPert.Radius }),
	field("huber", 0.0, "objpert and noisygd (linear): scale η of the Huber loss, whose gradient is bounded without a parameter ball (0: the default 0.5, on the encoded target scale |y| ≤ 1; negative: the squared loss, whose gradient needs the ball --radius); noisygd (logistic): the norm c ∈ (0, 1] each row's gradient is clipped to (0: the default 0.5; negative: the unclipped loss on the ball --radius)",
		func(c *Config) *float64 { return &c.Huber }),
	field("objpert-tolerance", 0.0, "objpert: public bound γ on the optimiser's gradient norm, covered by the output noise (0: default 1e-9)",
		func(c *Config) *float64 { return &c.ObjPert.Tolerance }),
	field("objpert-output-share", 0.0, "objpert: share of the budget given to the output noise, in (0, 1) (0: default)",
		func(c *Config) *float64 { return &c.ObjPert.OutputShare }),
	field("iterations", 0, "noisygd: number of steps T (0: default 100; full batch: linear Huber min(C, max(100, ⌊2Nε/d⌋)), C = min(4000, max(1000, ⌊Nε/d⌋)) (squared loss min(1000, max(100, ⌊Nε/(2d)⌋))), logistic clipped min(C, max(25, ⌊Nε/4⌋)), C = min(4000, max(1000, ⌊Nε/20⌋)))",
		func(c *Config) *int { return &c.NoisyGD.Iterations }),
	field("sigma", 0.0, "noisygd: noise multiplier (noise std ÷ sensitivity); 0: solve for it from --epsilon/--delta",
		func(c *Config) *float64 { return &c.NoisyGD.Sigma }),
	field("batch-rate", 0.0, "noisygd: Poisson sampling rate q of mini-batches (0 or 1: full batch)",
		func(c *Config) *float64 { return &c.NoisyGD.BatchRate }),
	field("learning-rate", 0.0, "noisygd: step size (0: 1/L, L the smoothness bound; on Huber's loss and the clipped logistic gradient at large N·ε/d, the data-scaled step: a 2% share of the budget releases the rows' mean squared norm)",
		func(c *Config) *float64 { return &c.NoisyGD.LearningRate }),
	field("gd-ridge", 0.0, "noisygd: data-independent ridge added to the objective",
		func(c *Config) *float64 { return &c.NoisyGD.Lambda }),
	field("irls-iterations", 0, "irls: iterations J (0: default: min(12, max(1, ⌊2 ln(Nε/d)⌋)) preconditioned, 3 gradient, 1 moments after a warm start, 2 cold)",
		func(c *Config) *int { return &c.IRLS.Iterations }),
	field("residual-floor", 0.0, "irls: floor η in the weights 1/max(η, |r|), encoded target scale (0: default: min(1, max(0.1, 1.5√(d/(Nε)))) for the gradient forms, min(1, max(0.3, 3√(d/(Nε)))) moments after a warm start, 0.2 cold)",
		func(c *Config) *float64 { return &c.IRLS.ResidualFloor }),
	field("irls-warm-start", 0.0, "irls: share of the budget for a Gaussian FM least-squares warm start (0: default 0.3 preconditioned, 0.2 otherwise; negative: the seed's cold start from ω = 0)",
		func(c *Config) *float64 { return &c.IRLS.WarmStart }),
	field("irls-form", "", "irls: what each iteration releases: preconditioned (g = (1/N)Σψ_η(r)x and m; the default after a warm start), gradient (g and B) or moments (the seed's A and B; the default cold)",
		func(c *Config) *string { return &c.IRLS.Form }),
	field("irls-split", 0.0, "irls: share of each iteration's budget given to the first release, A or g (0: 0.8 preconditioned, 0.5 otherwise)",
		func(c *Config) *float64 { return &c.IRLS.Split }),
	{Flag: "laplace-first-moment", Default: false, Help: "irls: Laplace instead of Gaussian noise on the first moment",
		set: func(c *Config, v any) {
			if v.(bool) {
				c.IRLS.FirstMoment = "laplace"
			}
		}},
}

// Mechanism describes one mechanism New accepts: the models it fits, the
// privacy parameters it takes, the options it reads (by flag name, see
// Options) and a summary for help texts. It is the one place that knows
// the mechanisms: New, Mechanisms and the CLI's flags, refusals and help
// are derived from it.
type Mechanism struct {
	Name    string
	Summary string // one or more lines, for `dplearn fit --help`
	Kinds   []Kind
	Privacy PrivacyParams
	// EpsilonOr names an option that replaces ε when given (noisygd's
	// --sigma fixes the noise and the guarantee follows from it).
	EpsilonOr string
	Options   []string
	new       func() Estimator
	// rho says whether a fit under c states a zCDP ρ (report.Privacy.Rho)
	// or is pure ε-DP, which a ρ ledger converts to ε²/2 (StatesRho);
	// nil: never. rhoOnly names the condition when it is not always.
	rho     func(c Config) bool
	rhoOnly string
}

// Reads reports whether the mechanism reads the option of that flag.
func (m Mechanism) Reads(flag string) bool { return slices.Contains(m.Options, flag) }

// StatesRho reports whether a fit under c has a guarantee a ρ-zCDP ledger
// can be charged: a zCDP ρ in its report (every release a Gaussian, or
// irls's zCDP accountant) or pure ε-DP (ρ = ε²/2). The others state only
// (ε, δ): objective perturbation's density argument and noisygd's
// Poisson-subsampled Rényi accounting have no ρ. TestRegistryStatesRho
// fits every mechanism and checks its report agrees.
func (m Mechanism) StatesRho(c Config) bool { return m.rho != nil && m.rho(c) }

// always is a rho rule that holds for every configuration.
func always(Config) bool { return true }

// fullBatch is noisygd's rho rule: full-batch steps compose as Gaussian
// DP, which is ρ = μ²/2-zCDP; Poisson batches are accounted in Rényi DP
// with no ρ.
func fullBatch(c Config) bool { return c.NoisyGD.BatchRate == 0 || c.NoisyGD.BatchRate == 1 }

var (
	linLog  = []Kind{Linear, Logistic}
	fmFlags = []string{"lambda", "lambda-factor", "logistic-approx", "logistic-range", "solve-radius"}
)

// registry lists the mechanisms in the order of the help text.
var registry = []Mechanism{
	{Name: "nonprivate", Kinds: []Kind{Linear, Logistic, Robust}, Privacy: NoPrivacy,
		Summary: "exact least squares / logistic maximum likelihood (reference only)",
		new:     func() Estimator { return nonPrivateAny{} }},
	{Name: "truncated", Kinds: linLog, Privacy: NoPrivacy,
		Summary: "minimiser of the Taylor-truncated objective, no noise (reference)",
		new:     func() Estimator { return truncated{} }},
	{Name: "fm", Kinds: linLog, Privacy: PureEpsilon, Options: fmFlags,
		Summary: "Functional Mechanism (Zhang et al. 2012): ε-DP, Laplace noise",
		new:     func() Estimator { return fmEstimator{} }, rho: always},
	{Name: "gaussian-fm", Kinds: linLog, Privacy: EpsilonDelta, Options: append([]string{"split", "eigen-floor"}, fmFlags...),
		Summary: "Gaussian FM (Tasnim et al.) with corrected sensitivities and joint\nanalytic-Gaussian calibration: (ε, δ)-DP; the recommended linear default\n(logistic: a quadratic surrogate, not log-odds; use objpert)",
		new:     func() Estimator { return gaussianFM{} }, rho: always},
	{Name: "auto", Kinds: linLog, Privacy: EpsilonDelta,
		Summary: fmt.Sprintf("the most accurate predictor by a public rule in N, d and ε: linear,\nHuber's loss by %s where N·ε/d is in [%d, %d], %s\nelsewhere; logistic, %s's clipped gradient; (ε, δ)-DP, the chosen\nmechanism's guarantee", AutoHuberPath, AutoLow, AutoHigh, AutoLeastSquaresPath, AutoLogisticPath),
		new:     func() Estimator { return autoEstimator{} }, rho: always},
	{Name: "relaxed-fm", Kinds: linLog, Privacy: EpsilonDelta, Options: fmFlags,
		Summary: "relaxed FM (Ding et al.): (ε, δ)-DP, one Gaussian on all coefficients",
		new:     func() Estimator { return relaxedFM{} }, rho: always},
	{Name: "objpert", Kinds: linLog, Privacy: EpsilonDelta, Options: []string{"objpert-lambda", "huber", "radius", "objpert-tolerance", "objpert-output-share"},
		Summary: "objective perturbation as approximate minima perturbation (Iyengar\net al. 2019; Chaudhuri et al. 2011 logistic, Kifer et al. 2012 linear\non a public parameter ball): (ε, δ)-DP, needs --delta; the recommended\nlogistic mechanism for inference: its estimand is the logistic\nmaximum-likelihood estimate (log-odds; de-ridged for intervals)",
		new:     func() Estimator { return objPert{} }},
	{Name: "noisygd", Kinds: linLog, Privacy: EpsilonDelta, EpsilonOr: "sigma", Options: []string{"huber", "radius", "iterations", "sigma", "batch-rate", "learning-rate", "gd-ridge"},
		Summary: "noisy gradient descent (Song et al. 2013), T steps, Huber's loss\n(linear) or clipped gradients (logistic): (ε, δ)-DP by Gaussian DP;\ngive --epsilon/--delta or --sigma; the recommended logistic default\nfor prediction (log-loss and accuracy)",
		new:     func() Estimator { return noisyGD{} }, rho: fullBatch, rhoOnly: "full batch"},
	{Name: "irls", Kinds: []Kind{Robust}, Privacy: EpsilonDelta, Options: []string{"irls-iterations", "residual-floor", "laplace-first-moment", "irls-split", "irls-warm-start", "irls-form", "lambda", "lambda-factor"},
		Summary: "DP-IRLS robust L1 regression (Park & Welling), --model robust:\nsymmetric Gaussian noise on the moments, zCDP accounting",
		new:     func() Estimator { return irlsEstimator{} }, rho: always},
	{Name: "irls-wishart", Kinds: []Kind{Robust}, Privacy: EpsilonOptionalDelta, Options: []string{"irls-iterations", "residual-floor", "laplace-first-moment"},
		Summary: "the seed's Wishart variant: NOT DP, for reproducing its figure only",
		new:     func() Estimator { return irlsWishart{} }},
	// The histogram baselines: pure ε-DP on the schema's public grid
	// (WithSchema), no options of their own.
	{Name: "dpme", Kinds: linLog, Privacy: PureEpsilon,
		Summary: "DPME (Lei 2011): Laplace histogram on the schema's public grid,\nthe model fitted on weighted synthetic cells: ε-DP (a baseline)",
		new:     func() Estimator { return dpmeEstimator{} }, rho: always},
	{Name: "filter-priority", Kinds: linLog, Privacy: PureEpsilon,
		Summary: "Filter-Priority (Cormode et al. 2012): geometric noise, a\nthreshold and priority sampling on the same grid: ε-DP (a baseline)",
		new:     func() Estimator { return filterPriority{} }, rho: always},
}

// Registry returns every mechanism, in the order of the help text.
func Registry() []Mechanism { return slices.Clone(registry) }

// LookupMechanism returns the mechanism of that name.
func LookupMechanism(name string) (Mechanism, bool) {
	i := slices.IndexFunc(registry, func(m Mechanism) bool { return m.Name == name })
	if i < 0 {
		return Mechanism{}, false
	}
	return registry[i], true
}

// Options returns every mechanism option, sorted by flag.
func Options() []Option {
	o := slices.Clone(options)
	slices.SortFunc(o, func(a, b Option) int { return strings.Compare(a.Flag, b.Flag) })
	return o
}

// MechanismsFor lists, sorted, the mechanisms that fit kind.
func MechanismsFor(kind Kind) []string {
	var ms []string
	for _, m := range registry {
		if slices.Contains(m.Kinds, kind) {
			ms = append(ms, m.Name)
		}
	}
	sort.Strings(ms)
	return ms
}

// ReadersOf lists, sorted, the mechanisms that read the option of flag.
func ReadersOf(flag string) []string {
	var ms []string
	for _, m := range registry {
		if m.Reads(flag) {
			ms = append(ms, m.Name)
		}
	}
	sort.Strings(ms)
	return ms
}

// MechanismHelp is the mechanisms' part of a help text: each name and its
// summary, aligned.
func MechanismHelp() string {
	var b strings.Builder
	for _, m := range registry {
		lines := strings.Split(m.Summary, "\n")
		name := m.Name
		if len(name) < 12 {
			name += strings.Repeat(" ", 12-len(name))
		} else if len(name) > 12 {
			name += " "
		}
		fmt.Fprintf(&b, "  %s %s\n", name, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "  %s %s\n", strings.Repeat(" ", 12), l)
		}
	}
	return b.String()
}

// RhoMechanisms lists, sorted, the mechanisms whose fits can state a zCDP
// ρ (StatesRho), each with its condition when there is one, e.g.
// "noisygd (full batch)".
func RhoMechanisms() []string {
	var ms []string
	for _, m := range registry {
		switch {
		case m.rho == nil:
		case m.rhoOnly != "":
			ms = append(ms, m.Name+" ("+m.rhoOnly+")")
		default:
			ms = append(ms, m.Name)
		}
	}
	sort.Strings(ms)
	return ms
}
