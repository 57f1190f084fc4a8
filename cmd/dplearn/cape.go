package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/capenet"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
	"github.com/dplearn/dplearn/transport"
)

// newCapeCmd builds `dplearn cape serve | join | simulate`.
func newCapeCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "cape",
		Short: "capeFM across sites that cannot share rows: serve (aggregator), join (site), simulate",
		Long: `cape fits one Gaussian FM model across several sites that cannot share their
rows (capeFM: Tasnim et al., Section 5, with the corrections of PRIVACY-NOTES
items 1-4, 8, 9, 18 and 23). Each site computes its statistics locally, adds
CAPE's zero-sum noise (hidden by secure aggregation) and its own small noise,
and sends one perturbed objective; the aggregator adds them up, the zero-sum
parts cancel, and it solves for the model.

  dplearn cape serve      the aggregator: listens, waits for the sites, runs the
                          protocol, writes the model with its privacy report
  dplearn cape join       one site: connects, checks the parameters it is offered
                          against its own flags and ledger, takes part
  dplearn cape simulate   every party on this machine, from one table split in S

The parties authenticate each other with mutual TLS 1.3 (certificates from
'dplearn certs'), and every site signs its secure-aggregation keys with its
certificate and checks every other site's, so the aggregator cannot
substitute keys. Guide: docs/capefm.md.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newCapeServeCmd(), newCapeJoinCmd(), newCapeSimulateCmd())
	return cmd
}

// capeFitFlags are the public parameters every party must agree on.
type capeFitFlags struct {
	schemaPath, model, mechanism string
	epsilon, delta, split        float64
	noiseRatio                   float64
	colluders                    int
}

func (f *capeFitFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringVar(&f.schemaPath, "schema", "", "schema file (JSON) with the public bounds; every party uses the same one")
	fl.StringVar(&f.model, "model", "", "linear or logistic")
	fl.StringVar(&f.mechanism, "mechanism", string(capefm.CapeFM), "capefm, or a conventional baseline: gaussian-fm-local, fm-local, objpert-local, noisygd-local")
	fl.Float64Var(&f.epsilon, "epsilon", 0, "per-site privacy parameter ε (> 0)")
	fl.Float64Var(&f.delta, "delta", 0, "per-site privacy parameter δ (e.g. 1e-5; keep it well below 1/N)")
	fl.Float64Var(&f.split, "split", regress.DefaultGaussianFMSplit, "share of the squared sensitivity given to Λ1 (the rest to Λ2)")
	fl.Float64Var(&f.noiseRatio, "noise-ratio", capefm.DefaultNoiseRatio, "capefm: R = Var(zero-sum noise) / Var(local noise); the model's noise variance is κ(R) = S·max((S_H+R)/(S_H(R+1)), 1/(S−1)) × central gaussian-fm's (100: κ = 1.287 at S = 5, S_C = 1, 1.5 at S = 3, S_C = 0; the seed's R = S: 1.875 at S = 5, S_C = 1)")
}

// parsed returns the kind, mechanism and schema with its fingerprint.
func (f *capeFitFlags) parsed(cmd *cobra.Command) (regress.Kind, capefm.Mechanism, *schema.Schema, [32]byte, error) {
	var zero [32]byte
	kind, err := regress.ParseKind(f.model)
	if err != nil {
		return "", "", nil, zero, fmt.Errorf("--model: %w", err)
	}
	if kind != regress.Linear && kind != regress.Logistic {
		return "", "", nil, zero, fmt.Errorf("--model: cape fits linear or logistic models, got %q", f.model)
	}
	mech := capefm.Mechanism(f.mechanism)
	if !validMechanism(mech) {
		return "", "", nil, zero, fmt.Errorf("--mechanism %q: want one of %s", f.mechanism, mechanismList())
	}
	if !(f.epsilon > 0) || math.IsInf(f.epsilon, 0) {
		return "", "", nil, zero, fmt.Errorf("--epsilon must be a finite number > 0, got %v", f.epsilon)
	}
	if mech != capefm.FMLocal && !(f.delta > 0 && f.delta < 1) {
		return "", "", nil, zero, fmt.Errorf("--delta must be in (0, 1) for mechanism %s, got %v", mech, f.delta)
	}
	if mech != capefm.CapeFM && cmd.Flags().Changed("noise-ratio") {
		return "", "", nil, zero, fmt.Errorf("--noise-ratio applies to --mechanism capefm only")
	}
	s, err := schema.Load(f.schemaPath)
	if err != nil {
		return "", "", nil, zero, err
	}
	if err := checkModelTarget(kind, s); err != nil {
		return "", "", nil, zero, err
	}
	fp, err := schema.Fingerprint(s)
	if err != nil {
		return "", "", nil, zero, err
	}
	return kind, mech, s, fp, nil
}

// deltaFor returns the δ the Params carry: 0 for the pure-ε fm-local.
func (f *capeFitFlags) deltaFor(mech capefm.Mechanism) float64 {
	if mech == capefm.FMLocal {
		return 0
	}
	return f.delta
}

// ratio returns the noise ratio the Params carry: R for capeFM, 0 otherwise.
func (f *capeFitFlags) ratio(mech capefm.Mechanism) float64 {
	if mech != capefm.CapeFM {
		return 0
	}
	return f.noiseRatio
}

func validMechanism(m capefm.Mechanism) bool {
	for _, x := range capefm.Mechanisms() {
		if x == m {
			return true
		}
	}
	return false
}

func mechanismList() string {
	var names []string
	for _, m := range capefm.Mechanisms() {
		names = append(names, string(m))
	}
	return strings.Join(names, ", ")
}

// baselineEstimator returns the regress mechanism a coefficient baseline
// runs at each site ("" for capefm and gaussian-fm-local, which need only
// the statistics).
func baselineEstimator(m capefm.Mechanism) string {
	switch m {
	case capefm.FMLocal:
		return "fm"
	case capefm.ObjPertLocal:
		return "objpert"
	case capefm.NoisyGDLocal:
		return "noisygd"
	}
	return ""
}

// eventSink returns the log sink for --format: lines of text, or JSON lines.
func eventSink(w io.Writer, format outputFormat, prefix string) func(capenet.Event) {
	if format == formatJSON {
		return capenet.JSONLog(w)
	}
	return capenet.TextLog(w, prefix)
}

const insecureWarning = "WARNING: --insecure: plaintext without certificates; party names are CLAIMED, NOT PROVEN, and anyone on this machine can read or forge messages. WITHOUT CERTIFICATES THE SITES' SECURE-AGGREGATION KEYS ARE NOT SIGNED OR CHECKED: the aggregator can substitute keys and read a site's noise. For tests on this machine only (loopback addresses); never with real data."

// partyFlags adds to a networked command's required flags the ones its
// identity needs: --name with --insecure, --certs otherwise.
func partyFlags(insecure bool, req ...string) []string {
	if insecure {
		return append(req, "name")
	}
	return append(req, "certs")
}

// partyIdentity returns this party's identity: with --insecure it warns
// loudly and returns no certificate and the claimed name; otherwise it loads
// the party's certificate from certDir and returns the name it proves.
func partyIdentity(stderr io.Writer, insecure bool, certDir, name string) (*certs.Party, string, error) {
	if insecure {
		fmt.Fprintln(stderr, insecureWarning)
		return nil, name, nil
	}
	id, err := certs.LoadParty(certDir)
	if err != nil {
		return nil, "", err
	}
	return id, id.Name, nil
}

// ---------------------------------------------------------------- serve

type capeServeOptions struct {
	fit                              capeFitFlags
	unit                             unitFlags
	logLevel                         string
	listen, certDir, out, name       string
	sites                            []string
	minSites, maxAttempts            int
	roundTimeout, joinTimeout, grace time.Duration
	redo, insecure                   bool
}

func newCapeServeCmd() *cobra.Command {
	var o capeServeOptions
	cmd := &cobra.Command{
		Use:   "serve --listen HOST:PORT --certs DIR/aggregator --sites NAMES --schema S.json --model linear|logistic --epsilon E --delta D --out MODEL.json",
		Short: "Run the aggregator of a capeFM fit and write the model",
		Long: `serve is the aggregator. It listens on --listen for the sites named in --sites
(mutual TLS 1.3 with the certificate in --certs: only certificates from the
same CA whose name is in --sites get in, and every message's sender is the
name in its certificate), then:

 1. waits for each site to announce itself: its name, its number of rows N_s
    (public under bounded DP) and the fingerprint of its schema. A site that
    announces another name than its certificate's, or another schema, is
    refused and told why. Serve starts when every expected site has announced,
    or after --join-timeout with at least --min-sites of them;
 2. offers the public parameters (sites and N_s, model, schema, ε, δ, S_C, R,
    τ); every site checks them against its own flags and budget ledger and
    agrees or refuses, naming the field;
 3. runs the rounds (keys, shares, masked zero-sum noise, unmasking, the sum,
    the releases), each with --round-timeout, logging one line per round:
      round 3/7 MaskedInput: 4 of 5 sites sent masked inputs, site-3 timed out (1.2 s)
 4. adds the releases (the zero-sum noise cancels exactly), solves, and writes
    the model with its privacy report to --out.

Dropouts: a site lost before the zero-sum noise is fixed (rounds 0-4) is left
out and the attempt redone with fresh noise and τ recalibrated for the new S
(S_C stays as fixed at the first roster: a redo never assumes fewer
colluders, and the sites refuse one that does), while at least --min-sites
remain and --max-attempts allows; a site lost after
it (round 6) makes the noise not cancel: nothing is published, the fit aborts
naming the site, and the sites that released in that attempt have spent their
budget (with --redo-after-release a new attempt composes the lost one into the
guarantee instead). A site whose connection closes counts as lost unless it
reconnects within --reconnect-grace.

The report gives the guarantee per site (for a record at a site outside the
adversary, against the aggregator colluding with up to S_C sites and against
any one site that reads the model and removes its own noise: the exact CAPE
accounting, with the lattice margin of the discrete noise), the trust model
(honest-but-curious parties, the aggregator with at most S_C colluders or any
one site alone, secure aggregation; privacy, not integrity), what the model
alone gives an outsider, and κ, the model's noise variance relative to central
gaussian-fm on the pooled data.

Mechanisms: capefm (default), or the seed's conventional baselines, in which
every site releases its own result with the full noise and the aggregator
averages with weights N_s/N: gaussian-fm-local, fm-local, objpert-local,
noisygd-local.

Logs go to stderr (--format json: one JSON object per event and per line;
--log-level debug adds slog diagnostics);
the model and its report to stdout. --insecure runs without certificates on a
loopback address only, for tests, and says so loudly.`,
		Example: `  dplearn cape serve --listen 0.0.0.0:7443 --certs pki/aggregator \
      --sites site-1,site-2,site-3 --schema cps.json --model linear \
      --epsilon 1 --delta 1e-5 --min-sites 2 --round-timeout 60s --out wage.json`,
		Args: cobra.NoArgs,
	}
	o.fit.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.listen, "listen", "127.0.0.1:7443", "address to listen on (HOST:PORT; port 0 picks a free one)")
	f.StringVar(&o.certDir, "certs", "", "the aggregator's certificate directory from 'dplearn certs' (party.crt, party.key, ca.crt)")
	f.StringSliceVar(&o.sites, "sites", nil, "the expected site names, comma-separated (their certificates' names); IDs follow this order")
	f.IntVar(&o.fit.colluders, "colluders", -1, "S_C: sites that may collude with the aggregator (-1: ⌈S/3⌉−1 for the first roster's S, the most secure aggregation tolerates); a redo after a dropout keeps it")
	f.IntVar(&o.minSites, "min-sites", 0, "fewest sites the fit may run with after dropouts or missing sites (≥ 2; 0: all of --sites)")
	f.IntVar(&o.maxAttempts, "max-attempts", capefm.DefaultMaxAttempts, "attempts before giving up (each redo after a dropout is one)")
	f.DurationVar(&o.roundTimeout, "round-timeout", 30*time.Second, "how long each round waits for the sites")
	f.DurationVar(&o.joinTimeout, "join-timeout", 0, "how long to wait for the expected sites to connect and announce themselves (0: --round-timeout)")
	f.DurationVar(&o.grace, "reconnect-grace", 2*time.Second, "how long a site whose connection closed may take to reconnect before it counts as lost")
	f.BoolVar(&o.redo, "redo-after-release", false, "capefm: after a site lost in the release round, redo the fit and compose the lost attempt into the guarantee (instead of aborting)")
	f.StringVar(&o.out, "out", "", "where to write MODEL.json")
	f.BoolVar(&o.insecure, "insecure", false, "no TLS, no certificates, no key signatures, loopback only: for tests on this machine")
	f.StringVar(&o.name, "name", capenet.DefaultHubName, "with --insecure: the aggregator's name")
	common := capeCommonFlags(cmd, &o.unit, false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fm, level, err := common(o.fit.mechanism)
		if err != nil {
			return err
		}
		o.logLevel = level
		req := []string{"sites", "schema", "model", "epsilon", "out"}
		if !o.insecure {
			req = append(req, "certs")
		}
		if err := requireFlags(cmd, req...); err != nil {
			return err
		}
		if err := checkCapeServeFlags(cmd); err != nil {
			return err
		}
		return runCapeServe(cmd.Context(), cmd, o, fm)
	}
	return cmd
}

func runCapeServe(ctx context.Context, cmd *cobra.Command, o capeServeOptions, format outputFormat) error {
	kind, mech, s, fp, err := o.fit.parsed(cmd)
	if err != nil {
		return err
	}
	sites := trimAll(o.sites)
	if len(sites) < 2 {
		return fmt.Errorf("--sites: need at least 2 site names, got %d", len(sites))
	}
	minSites := o.minSites
	if minSites == 0 {
		minSites = len(sites)
	}
	if minSites < 2 || minSites > len(sites) {
		return fmt.Errorf("--min-sites %d: want 2 to %d (the number of --sites)", minSites, len(sites))
	}
	if o.insecure && cmd.Flags().Changed("certs") {
		return errors.New("--insecure and --certs: choose one")
	}
	d := len(s.FeatureNames())
	roster := make([]capefm.SiteInfo, len(sites))
	for i, name := range sites {
		if err := certs.ValidateName(name); err != nil {
			return fmt.Errorf("--sites: %w", err)
		}
		roster[i] = capefm.SiteInfo{Name: name, ID: uint32(i + 1)}
	}
	out, err := openCheckedOutput("--out", o.out, cmd.OutOrStdout(), append(certFiles("--certs", o.certDir), fileFlag{"--schema", o.fit.schemaPath})...)
	if err != nil {
		return err // before listening: a bad --out costs no site anything
	}
	defer out.Abort() // no-op after saveModel
	template := capefm.Params{Mechanism: mech, Kind: kind, Schema: fp, D: d, Epsilon: o.fit.epsilon, Delta: o.fit.deltaFor(mech),
		Split: o.fit.split, Sites: roster, Colluders: o.fit.colluders, MinSites: minSites, NoiseRatio: o.fit.ratio(mech),
		Unit: o.unit.column, MaxRows: o.unit.k}
	stderr := &lockedWriter{w: cmd.ErrOrStderr()} // the events and the slog records of every party
	sink := eventSink(stderr, format, "")
	logger := newCapeLogger(stderr, format, o.logLevel, sink)
	cfg := transport.ServerConfig{HubConfig: capenet.HubConfig(sites, d), Address: o.listen, Insecure: o.insecure}
	cfg.Logger = logger
	if cfg.Identity, cfg.Name, err = partyIdentity(stderr, o.insecure, o.certDir, o.name); err != nil {
		return err
	}
	srv, err := transport.Listen(ctx, cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	mode := "mutual TLS 1.3"
	if o.insecure {
		mode = "INSECURE plaintext"
	}
	join := o.joinTimeout
	if join == 0 {
		join = o.roundTimeout
	}
	sink(capenet.Event{Time: time.Now(), Kind: "listening", Address: srv.Addr().String(), Sites: sites,
		Message: fmt.Sprintf("listening on %s (%s); expecting %s; waiting up to %v for them to announce themselves (minimum %d)",
			srv.Addr(), mode, strings.Join(sites, ", "), join, minSites)})
	sopt := capenet.ServeOptions{Schema: s, RoundTimeout: o.roundTimeout, JoinTimeout: join,
		MaxAttempts: o.maxAttempts, RedoAfterRelease: o.redo, ReconnectGrace: o.grace, Events: sink, Logger: logger}
	// The aggregator checks every site's signed keys before relaying them
	// (a site whose keys fail counts as missing); --insecure cannot.
	if cfg.Identity != nil {
		if sopt.KeyVerifier, err = certs.NewStatementSigner(cfg.Identity); err != nil {
			return err
		}
	}
	res, err := capenet.Serve(ctx, srv, template, sopt)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	priv := res.Privacy
	if o.insecure {
		priv.Notes = append(priv.Notes, "INSECURE transport (--insecure): no certificates, site names were claimed and not proven, messages were neither authenticated nor encrypted, and the sites' secure-aggregation keys were neither signed nor checked (the aggregator could have substituted them and read a site's noise): the trust model's authenticated channels do not hold; a test run, not for publication")
	}
	model, err := regress.NewModel(kind, s, &regress.Result{Coef: res.Coef, Privacy: priv, Trimmed: res.Trimmed},
		regress.Training{Rows: res.Params.N()})
	if err != nil {
		return err
	}
	if err := saveModel(model, out); err != nil {
		return fmt.Errorf("--out: %w (the sites were charged for this fit)", err)
	}
	return printCapeModel(cmd.OutOrStdout(), format, model, o.out, res)
}

// printCapeModel prints a capeFM model: the attempts, then as `fit` does.
func printCapeModel(w io.Writer, format outputFormat, model *regress.Model, path string, res *capefm.RunResult) error {
	var attempts []map[string]any
	for _, a := range res.Attempts {
		m := map[string]any{"attempt": a.Attempt, "sites": a.Sites}
		if a.Err != nil {
			m["error"] = a.Err.Error()
		}
		attempts = append(attempts, m)
	}
	// With a privacy unit the public counts are units ("units"); the rows
	// per unit are not released, so there is no "rows".
	count := "rows"
	if res.Params.MaxRows > 0 {
		count = "units"
	}
	sites := make([]map[string]any, len(res.Params.Sites))
	for i, s := range res.Params.Sites {
		sites[i] = map[string]any{"name": s.Name, count: s.N}
	}
	if format == formatJSON {
		out := map[string]any{
			"model_file":   path,
			"model":        model.Kind,
			"mechanism":    res.Params.Mechanism,
			count:          res.Params.N(),
			"sites":        sites,
			"attempts":     attempts,
			"features":     model.Features,
			"coefficients": model.Coefficients,
			"privacy":      model.Privacy,
		}
		if res.Params.MaxRows > 0 {
			out["privacy_unit"], out["max_rows_per_unit"] = res.Params.Unit, res.Params.MaxRows
		}
		if res.Params.Mechanism == capefm.CapeFM {
			out["noise_ratio"] = res.Params.NoiseRatio
			out["kappa"] = res.Calibration.Kappa
		}
		return writeJSON(w, out)
	}
	for _, a := range res.Attempts {
		if a.Err != nil {
			fmt.Fprintf(w, "attempt %d (%s) failed: %v\n", a.Attempt, strings.Join(a.Sites, ", "), a.Err)
		}
	}
	fmt.Fprintf(w, "capeFM fit over %d sites (attempt %d)\n", len(res.Params.Sites), res.Params.Attempt)
	return printFitText(w, model, path, 0)
}

// ---------------------------------------------------------------- join

type capeJoinOptions struct {
	fit                               capeFitFlags
	unit                              unitFlags
	logLevel                          string
	server, serverName, certDir, data string
	stats                             string
	ledger, name                      string
	budgetEpsilon, budgetDelta        float64
	minSites, maxAttempts, workers    int
	connectAttempts                   int
	idle, peerTimeout                 time.Duration
	insecure, seeded                  bool
	seed                              uint64
	part                              string
	faults                            func() (capeJoinFaults, error) // test binary only
}

func newCapeJoinCmd() *cobra.Command {
	var o capeJoinOptions
	cmd := &cobra.Command{
		Use:   "join --server HOST:PORT --certs DIR/SITE --data FILE --schema S.json --model linear|logistic --epsilon E --delta D [--ledger FILE]",
		Short: "Take part in a capeFM fit as one site",
		Long: `join runs one site. Before it connects it reads and validates its whole table
(--data, CSV or Parquet, through the same data path as 'dplearn fit'): a bad
record stops here, on this console, with its file, line and column, never as a
visible, data-dependent abort in the middle of the protocol (PRIVACY-NOTES
item 23). Then it connects to --server with mutual TLS 1.3 (its certificate
from --certs; the server must present the certificate of --server-name from
the same CA, whatever address was dialled) and announces its name, its
number of rows N_s (public under bounded DP) and its schema's fingerprint.

When the aggregator offers the fit's parameters, the site checks every one
against its own flags before anything is drawn or spent: mechanism, model,
schema fingerprint, number of features, ε, δ, budget split, noise ratio R, its
own name and N_s in the roster, at least --min-sites sites, a colluder bound
S_C of at least max(--colluders, ⌈S/3⌉−1, the S_C of any earlier attempt of
this fit it accepted: a redo may not assume fewer colluders), the attempt
number (at most
--max-attempts), and that τ meets (ε, δ) by its own calibration; it also asks
its ledger whether it can pay. On any difference it refuses, naming the field
("parameter epsilon: offered 2, want 1"), and the aggregator's fit stops.

The site signs its secure-aggregation keys with its certificate's key, and
before it derives any shared key it checks every other site's signature
against a certificate from its own CA naming that site; an unsigned, forged,
substituted or replayed key makes it abandon the attempt, naming the site
(--insecure has no certificates and cannot do this).

The site spends its own budget: with --ledger FILE (created with
--budget-epsilon/--budget-delta if it does not exist), each release is charged
to the ledger before it is sent, and a release the ledger cannot pay is never
made. Without --ledger nothing records the spend.

Logs go to stderr (--format json: JSON lines); the outcome to stdout. The
exit status is 0 only when the aggregator reports a published model.`,
		Example: `  dplearn cape join --server agg.example.org:7443 --certs dplearn-id \
      --data site2.csv --schema cps.json --model linear --epsilon 1 --delta 1e-5 \
      --ledger budget.json --budget-epsilon 5 --budget-delta 1e-4`,
		Args: cobra.NoArgs,
	}
	o.fit.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.server, "server", "", "the aggregator's HOST:PORT")
	f.StringVar(&o.serverName, "server-name", capenet.DefaultHubName, "the name in the aggregator's certificate")
	f.StringVar(&o.certDir, "certs", "", "this site's certificate directory from 'dplearn certs' (its name is the site's name)")
	f.StringVar(&o.data, "data", "", "this site's table (CSV, CSV.gz or Parquet)")
	f.StringVar(&o.stats, "stats", "", statsFlagHelp)
	f.IntVar(&o.fit.colluders, "colluders", -1, "refuse fits that assume fewer than this many colluding sites (-1: ⌈S/3⌉−1)")
	f.IntVar(&o.minSites, "min-sites", 2, "refuse fits of fewer sites")
	f.IntVar(&o.maxAttempts, "max-attempts", capefm.DefaultMaxAttempts, "refuse attempt numbers above this")
	f.StringVar(&o.ledger, "ledger", "", "privacy budget ledger file (see 'dplearn privacy ledger'); charged before each release")
	f.Float64Var(&o.budgetEpsilon, "budget-epsilon", 0, "with --ledger: create the ledger with this ε budget if the file does not exist")
	f.Float64Var(&o.budgetDelta, "budget-delta", 0, "with --ledger: the δ budget of a new ledger")
	f.DurationVar(&o.idle, "idle-timeout", 10*time.Minute, "give up when the aggregator sends nothing for this long")
	f.IntVar(&o.connectAttempts, "connect-attempts", 8, "connection attempts before giving up (backoff from 0.2 s doubling to 5 s: about 16 s in all), also after a lost connection")
	f.DurationVar(&o.peerTimeout, "peer-timeout", transport.DefaultPeerTimeout, "give up when the connection to the aggregator has been down this long (it died or is unreachable)")
	f.BoolVar(&o.insecure, "insecure", false, "no TLS, no certificates, no key signatures, loopback only: for tests on this machine")
	f.StringVar(&o.name, "name", "", "with --insecure: this site's name")
	f.Uint64Var(&o.seed, "seed", 0, "use a deterministic INSECURE noise generator with this seed (experiments only; the model's report says so)")
	f.IntVar(&o.workers, "workers", 0, "parsing goroutines (0: all cores)")
	f.StringVar(&o.part, "part", "", "I/S: use only rows I, I+S, I+2S, ... (1-based) of --data (used by 'cape simulate')")
	_ = f.MarkHidden("part")
	if addCapeJoinFaults != nil {
		o.faults = addCapeJoinFaults(f)
	}
	common := capeCommonFlags(cmd, &o.unit, false)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fm, level, err := common(o.fit.mechanism)
		if err != nil {
			return err
		}
		o.logLevel = level
		req, err := dataOrStats(cmd, partyFlags(o.insecure, "server", "data", "schema", "model", "epsilon"))
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, req...); err != nil {
			return err
		}
		o.seeded = cmd.Flags().Changed("seed")
		return runCapeJoin(cmd.Context(), cmd, o, fm)
	}
	return cmd
}

func runCapeJoin(ctx context.Context, cmd *cobra.Command, o capeJoinOptions, format outputFormat) error {
	kind, mech, s, fp, err := o.fit.parsed(cmd)
	if err != nil {
		return err
	}
	if o.insecure && cmd.Flags().Changed("certs") {
		return errors.New("--insecure and --certs: choose one")
	}
	var fault capeJoinFaults = noFaults{}
	if o.faults != nil {
		if fault, err = o.faults(); err != nil {
			return err
		}
	}
	part, parts, err := parsePart(o.part)
	if err != nil {
		return err
	}
	stderr := &lockedWriter{w: cmd.ErrOrStderr()} // the events and the slog records of every party
	id, name, err := partyIdentity(stderr, o.insecure, o.certDir, o.name)
	if err != nil {
		return err
	}
	// The whole table is read and validated before anything is sent.
	// With a privacy unit the selection key is the noise source's first 32
	// bytes, as in 'dplearn fit --privacy-unit'.
	src := randomSource(o.seeded, o.seed)
	var data regress.Data
	var kept string
	switch {
	case o.stats != "":
		data, err = loadSiteStats(o.stats, s, kind, mech, parts)
	case o.unit.column != "":
		var sum dataset.UnitSummary
		data, sum, err = loadUnitInput(ctx, o.data, s, o.unit, src, dataset.Options{Workers: o.workers}, false)
		kept = fmt.Sprintf(" (%s of %s kept, at most %d per unit of %q; the row counts stay on this console)",
			dataset.Plural(sum.Kept, "row"), dataset.Plural(sum.Units, "unit"), o.unit.k, o.unit.column)
	default:
		data, err = loadSiteData(ctx, o.data, s, kind, mech, part, parts, o.workers)
	}
	if err != nil {
		return err
	}
	ledger, ledgerNote, err := openSiteLedger(ctx, o.ledger, name, o.budgetEpsilon, o.budgetDelta, cmd.Flags().Changed("budget-epsilon"))
	if err != nil {
		return err
	}
	siteName := name
	if fault.claimName() != "" {
		siteName = fault.claimName()
	}
	scfg := capefm.SiteConfig{Name: siteName, Mechanism: mech, Kind: kind, Schema: fp,
		Epsilon: o.fit.epsilon, Delta: o.fit.deltaFor(mech), Split: o.fit.split, NoiseRatio: o.fit.ratio(mech),
		MinColluders: max(o.fit.colluders, 0), MinSites: o.minSites, MaxAttempts: o.maxAttempts,
		Source: src, Ledger: ledger, Unit: o.unit.column, MaxRows: o.unit.k}
	if scfg.Declaration, err = capefm.SchemaDeclaration(s); err != nil {
		return err
	}
	// The site signs its secure-aggregation keys with its certificate and
	// checks every other site's against its CA; --insecure has no
	// certificate to do either (insecureWarning says so).
	if id != nil {
		signID := id
		if fault.signKeysWith() != "" {
			if signID, err = certs.LoadParty(fault.signKeysWith()); err != nil {
				return err
			}
		}
		if scfg.Signer, err = certs.NewStatementSigner(signID); err != nil {
			return err
		}
	} else {
		scfg.UnsignedKeys = true
	}
	site, err := capefm.NewSite(scfg, data)
	if err != nil {
		return err
	}
	sink := eventSink(stderr, format, "")
	logger := newCapeLogger(stderr, format, o.logLevel, sink)
	sink(capenet.Event{Time: time.Now(), Kind: "loaded", Site: name, N: site.N(),
		Message: fmt.Sprintf("read and validated %s of %s (%d features) as %s%s; %s", dataset.Plural(int64(site.N()), siteNoun(o.unit)), o.data+o.stats, site.D(), name, kept, ledgerNote)})
	d := len(s.FeatureNames())
	ccfg := transport.ClientConfig{Address: o.server, Server: o.serverName, Identity: id, Insecure: o.insecure, Session: capenet.Session(),
		Attempts: o.connectAttempts, PeerTimeout: o.peerTimeout, AckTimeout: o.idle,
		MaxPayload: max(transport.DefaultMaxPayload, capenet.MaxPayload(d, 4096)), Logger: logger}
	if o.insecure {
		ccfg.Name = name
	}
	conn, err := transport.Dial(ctx, ccfg)
	if err != nil {
		return err
	}
	defer conn.Close()
	sink(capenet.Event{Time: time.Now(), Kind: "connected", Site: name, Address: o.server,
		Message: fmt.Sprintf("connected to %s at %s as %s", o.serverName, o.server, name)})
	jopt := capenet.JoinOptions{IdleTimeout: o.idle, Events: sink, Logger: logger}
	if h := fault.hook(stderr, faultTarget{id: id, insecure: o.insecure, name: name, server: o.serverName, address: o.server, d: d}); h != nil {
		jopt.BeforeSend = h
	}
	res, err := capenet.Join(ctx, conn, site, jopt)
	if err != nil {
		return err
	}
	if sl, ok := ledger.(siteLedger); ok {
		if st, err := sl.l.State(ctx); err == nil {
			spent := st.Spent()
			ledgerNote = fmt.Sprintf("ledger %s: budget %v, now spent ε = %g, δ = %g in %d charge(s)", o.ledger, st.Budget, spent.Epsilon, spent.Delta, len(st.Charges))
		}
	}
	w := cmd.OutOrStdout()
	if format == formatJSON {
		return writeJSON(w, map[string]any{"site": name, "outcome": res.Outcome.Text, "ok": res.Outcome.OK,
			"releases": res.Releases, "attempts": res.Attempts, "ledger": o.ledger})
	}
	fmt.Fprintf(w, "%s: %s\n", name, res.Outcome.Text)
	fmt.Fprintf(w, "%s: released %d time(s) in %d attempt(s); %s\n", name, res.Releases, res.Attempts, ledgerNote)
	return nil
}

// siteNoun is what a site's public count counts.
func siteNoun(u unitFlags) string {
	if u.column != "" {
		return "unit"
	}
	return "row"
}

// parsePart parses --part I/S.
func parsePart(s string) (part, parts int, err error) {
	if s == "" {
		return 0, 0, nil
	}
	if _, err := fmt.Sscanf(s, "%d/%d", &part, &parts); err != nil || parts < 1 || part < 1 || part > parts {
		return 0, 0, fmt.Errorf("--part %q: want I/S with 1 ≤ I ≤ S", s)
	}
	return part, parts, nil
}

// loadSiteData reads the site's table through the data path: statistics
// always, rows for the coefficient baselines that need them. With parts >
// 0 only rows part−1, part−1+parts, ... are used (simulate's split). Every
// row is encoded and validated; a bad one stops here with its location.
func loadSiteData(ctx context.Context, path string, s *schema.Schema, kind regress.Kind, mech capefm.Mechanism, part, parts, workers int) (regress.Data, error) {
	needRows := false
	if b := baselineEstimator(mech); b != "" {
		est, err := regress.New(b)
		if err != nil {
			return regress.Data{}, err
		}
		needRows = est.NeedsRows(kind)
	}
	opt := dataset.Options{Workers: workers}
	if parts == 0 {
		if !needRows {
			m, _, err := dataset.Moments(ctx, path, s, opt)
			if err != nil {
				return regress.Data{}, err
			}
			return regress.Data{Stats: m}, nil
		}
		t, _, err := dataset.Load(ctx, path, s, opt)
		if err != nil {
			return regress.Data{}, err
		}
		m := suffstat.New(t.K)
		if err := m.AddRows(t.Rows); err != nil {
			return regress.Data{}, err
		}
		m.Flush()
		return regress.Data{Stats: m, Rows: t.Rows}, nil
	}
	var m *suffstat.Moments
	var rows []float64
	var index int64
	k := len(s.FeatureNames()) + 1
	_, err := dataset.Stream(ctx, path, s, opt, func(batch []float64) error {
		if m == nil {
			m = suffstat.New(k)
		}
		for r := 0; r+k <= len(batch); r += k {
			if index%int64(parts) == int64(part-1) {
				row := batch[r : r+k]
				if err := m.AddRows(row); err != nil {
					return err
				}
				if needRows {
					rows = append(rows, row...)
				}
			}
			index++
		}
		return nil
	})
	if err != nil {
		return regress.Data{}, err
	}
	if m == nil || m.N() == 0 {
		return regress.Data{}, fmt.Errorf("%s: part %d/%d has no rows", path, part, parts)
	}
	m.Flush()
	return regress.Data{Stats: m, Rows: rows}, nil
}

// siteLedger adapts ledger.Ledger to capefm.Ledger and
// capefm.LedgerChecker.
type siteLedger struct {
	ctx context.Context
	l   *ledger.Ledger
}

func (s siteLedger) Charge(label string, eps, delta float64) error {
	_, err := s.l.Charge(s.ctx, label, ledger.Charge{Epsilon: eps, Delta: delta})
	return err
}

// CanCharge checks, without spending, that the ledger can pay (ε, δ), by
// the ledger's own exact rule (ledger.State.CheckCharge: what Charge will
// decide; a pure ε on a ρ-zCDP ledger converted as Charge converts it).
func (s siteLedger) CanCharge(eps, delta float64) error {
	st, err := s.l.State(s.ctx)
	if err != nil {
		return err
	}
	return st.CheckCharge(ledger.Charge{Epsilon: eps, Delta: delta})
}

// memoryLedger records nothing: a site without --ledger.
type memoryLedger struct{}

func (memoryLedger) Charge(string, float64, float64) error { return nil }

// openSiteLedger opens (or creates) the site's ledger and describes it.
func openSiteLedger(ctx context.Context, path, name string, eps, delta float64, create bool) (capefm.Ledger, string, error) {
	if path == "" {
		if create {
			return nil, "", errors.New("--budget-epsilon needs --ledger FILE")
		}
		return memoryLedger{}, "no --ledger: the spend is not recorded (keep a ledger to bound this site's total spend across fits)", nil
	}
	var l *ledger.Ledger
	var err error
	if _, serr := os.Stat(path); errors.Is(serr, os.ErrNotExist) {
		if !create {
			return nil, "", fmt.Errorf("ledger %s does not exist: create it with --budget-epsilon (and --budget-delta), or with 'dplearn privacy ledger create'", path)
		}
		if l, err = ledger.Create(ctx, path, name, ledger.Budget{Epsilon: eps, Delta: delta}); err != nil {
			return nil, "", err
		}
	} else if l, err = ledger.Open(path); err != nil {
		return nil, "", err
	}
	st, err := l.State(ctx)
	if err != nil {
		return nil, "", err
	}
	spent := st.Spent()
	note := fmt.Sprintf("ledger %s: budget %v, spent ε = %g, δ = %g in %d charge(s)", path, st.Budget, spent.Epsilon, spent.Delta, len(st.Charges))
	if create && (st.Budget.Epsilon != eps || st.Budget.Delta != delta) {
		note += fmt.Sprintf(" (the existing budget is kept; --budget-epsilon %g --budget-delta %g ignored)", eps, delta)
	}
	return siteLedger{ctx: ctx, l: l}, note, nil
}
