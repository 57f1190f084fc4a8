package regress_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// TestReportIsPublic checks PRIVACY-NOTES item 23 for every private
// mechanism of regress.Mechanisms (and each DP-IRLS form, the logistic
// approximations, the solving ball and the schema's Gram structure): what
// a user receives may depend only on public parameters and on released
// (noisy) values. "What a user receives" is everything of a fit: the text
// report, the warnings, and the whole model file as JSON (coefficients,
// privacy section, training section with its warnings, and the inference
// section with the confidence intervals that `dplearn fit` computes from
// the released objective, with the extra Λ0 or residual-summary release
// composed into the report).
//
// Each case is fitted with the same seeded randomness on three datasets of
// the same size N: A (N records of an example table), A′ (A with one
// record replaced by an extreme one: a neighbour) and B (N other records).
// After the released values listed in releasedFields are put in
// placeholders, by field and with the reason, the three outputs must be
// equal byte for byte. No other figure is masked: a count of rows, an
// optimiser diagnostic or a clipping count anywhere in the output fails the
// test (mutants/regress.txt reintroduces such lines). The one released
// figure the report text quotes, Result.Trimmed, is recomputed from the
// released objective and its public post-processing alone.
func TestReportIsPublic(t *testing.T) {
	const n = 1500
	lin := loadNeighbours(t, "CPS1988.csv", "cps1988", n, `8103.08,20,60,"afam","yes","west","yes"`)
	logi := loadNeighbours(t, "SmokeBan.csv", "smokeban", n, `"no","yes",90,"master","yes","yes","male"`)
	type fitCase struct {
		mech  string
		kind  regress.Kind
		delta float64
		opt   func(*regress.Config)
	}
	cases := []fitCase{
		{"fm", regress.Linear, 0, nil}, {"fm", regress.Logistic, 0, nil},
		{"relaxed-fm", regress.Linear, 1e-6, nil}, {"relaxed-fm", regress.Logistic, 1e-6, nil},
		{"gaussian-fm", regress.Linear, 1e-6, nil}, {"gaussian-fm", regress.Logistic, 1e-6, nil},
		{"gaussian-fm", regress.Linear, 1e-6, func(c *regress.Config) { c.Structure = nil }},
		{"gaussian-fm", regress.Logistic, 1e-6, func(c *regress.Config) { c.LogisticApprox = regress.ApproxChebyshev }},
		{"fm", regress.Logistic, 0, func(c *regress.Config) { c.LogisticApprox = regress.ApproxLeastSquares; c.LogisticRange = 3 }},
		{"gaussian-fm", regress.Linear, 1e-6, func(c *regress.Config) { c.SolveRadius = 0.5 }},
		{"noisygd", regress.Linear, 1e-6, nil}, {"noisygd", regress.Logistic, 1e-6, nil},
		{"objpert", regress.Linear, 1e-6, nil}, {"objpert", regress.Logistic, 1e-6, nil},
		{"auto", regress.Linear, 1e-6, nil},
		{"irls", regress.Robust, 1e-6, nil}, // preconditioned (the default)
		{"irls", regress.Robust, 1e-6, func(c *regress.Config) { c.IRLS.Form = regress.IRLSFormGradient }},
		{"irls", regress.Robust, 1e-6, func(c *regress.Config) { c.IRLS.Form = regress.IRLSFormMoments }},
		{"irls", regress.Robust, 1e-6, func(c *regress.Config) { c.IRLS.WarmStart = -1 }}, // the seed's cold start
		{"irls", regress.Robust, 1e-6, func(c *regress.Config) { c.IRLS.FirstMoment = "laplace"; c.IRLS.Form = regress.IRLSFormGradient }},
		{"dpme", regress.Linear, 0, nil}, {"dpme", regress.Logistic, 0, nil},
		{"filter-priority", regress.Linear, 0, nil}, {"filter-priority", regress.Logistic, 0, nil},
	}
	// Every private mechanism New accepts must have a case.
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.mech] = true
	}
	for _, m := range regress.Mechanisms() {
		est, err := regress.New(m)
		if err != nil {
			t.Fatal(err)
		}
		if est.Private() && !covered[m] {
			t.Errorf("private mechanism %q has no case in TestReportIsPublic", m)
		}
	}
	for _, c := range cases {
		ds := lin
		if c.kind == regress.Logistic {
			ds = logi
		}
		name := fmt.Sprintf("%s %s", c.mech, c.kind)
		var outs [3]userOutput
		for i, data := range ds.data {
			est, err := regress.New(c.mech)
			if err != nil {
				t.Fatal(err)
			}
			est = regress.WithSchema(est, ds.schema)
			cfg := regress.Config{Kind: c.kind, Epsilon: 1, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(7)}
			if cfg.Structure, err = regress.GramStructureFor(ds.schema); err != nil {
				t.Fatal(err)
			}
			if c.opt != nil {
				c.opt(&cfg)
			}
			if outs[i], err = receive(est, data, cfg, ds.schema); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		for i, other := range []string{"A′ (a neighbour of A: one record replaced by an extreme one)", "B (other records, same N)"} {
			a, b := outs[0], outs[i+1]
			if a.text != b.text {
				t.Errorf("%s: the text report differs between A and %s:\n%s", name, other, lineDiff(a.text, b.text))
			}
			if a.model != b.model {
				t.Errorf("%s: the model file differs between A and %s:\n%s", name, other, lineDiff(a.model, b.model))
			}
		}
	}
}

// releasedField is a field of the user's output that is a function of the
// released noisy values (so it may differ between datasets), with the
// reason; canon, when set, masks only the released figure inside a string
// field (the rest of the string must still agree).
type releasedField struct {
	path string // JSON path in the model file; "[]" stands for every element
	why  string
	// canon rewrites a string value (text and JSON) given the fit's
	// released figures; nil masks the whole value.
	canon func(s string, r released) string
}

// released holds the released figures a string may contain.
type released struct {
	trimmed, d int
}

var (
	// The trimming count, exactly as the FM family and the DP-IRLS forms
	// print it: "k of d eigen-directions" / "k of d directions", with k
	// the fit's Result.Trimmed and d its number of coefficients.
	trimPhrase = func(s string, r released) string {
		re := regexp.MustCompile(fmt.Sprintf(`\b%d of %d (eigen-)?directions`, r.trimmed, r.d))
		return re.ReplaceAllString(s, fmt.Sprintf("⟨Result.Trimmed⟩ of %d ${1}directions", r.d))
	}
	// The histogram baselines' warnings about their fit on the synthetic
	// data (each the whole warning, its one figure masked).
	synthWarning = func(s string, _ released) string {
		for _, re := range synthWarnings {
			s = re.ReplaceAllString(s, "⟨synthetic-fit figure⟩")
		}
		return s
	}
	// DP-IRLS intervals quote the extrapolation gain f^J computed from the
	// released residual summary.
	irlsGain = func(s string, _ released) string {
		return irlsGainRe.ReplaceAllString(s, "gain f^J = ⟨from the released residual summary⟩ (")
	}
	irlsGainRe    = regexp.MustCompile(`gain f\^J = [-+.0-9eE]+ \(`)
	synthWarnings = []*regexp.Regexp{
		regexp.MustCompile(`\b\d+( collinear direction\(s\) in the synthetic data: the minimum-norm least-squares solution is returned)`),
		regexp.MustCompile(`\(gradient norm [^)]*\)`),
	}
)

// releasedFields lists every figure of the user's output allowed to depend
// on the data, and why it is public. Everything else must be identical
// between datasets of the same size.
var releasedFields = []releasedField{
	{path: "coefficients", why: "the fitted coefficients: post-processing of the released noisy values"},
	{path: "training.trimmed_directions", why: "Result.Trimmed: eigen-directions of the released noisy Λ2 (or B, or the warm start's G̃) removed by spectral trimming, a function of released values"},
	{path: "privacy.post_processing[]", why: "the post-processing lines quote Result.Trimmed (only that figure is masked)", canon: trimPhrase},
	{path: "training.warnings[]", why: "dpme and filter-priority warn about their fit on the synthetic data, which are post-processing of the noisy histogram (only that figure is masked)", canon: synthWarning},
	{path: "inference.coefficients[].identified", why: "whether the released Λ2 determines the coefficient (trimming of released values)"},
	{path: "inference.coefficients[].estimate", why: "bias-corrected estimate from the released objective"},
	{path: "inference.coefficients[].se", why: "bootstrap of the public noise law around the released objective"},
	{path: "inference.coefficients[].lower", why: "bootstrap of the public noise law around the released objective"},
	{path: "inference.coefficients[].upper", why: "bootstrap of the public noise law around the released objective"},
	{path: "inference.coefficients[].noise_se", why: "bootstrap of the public noise law around the released objective"},
	{path: "inference.coefficients[].sampling_se", why: "sampling part from the released Λ2 and residual variance"},
	{path: "inference.covariance", why: "bootstrap covariance around the released objective"},
	{path: "inference.residual_variance", why: "from the released Λ0 (linear), released Λ2 (logistic) or the released residual summary (irls)"},
	{path: "inference.method", why: "irls: the extrapolation gain f^J = (1 − share/(η·mean weight))^J of the released residual summary (only that figure is masked)", canon: irlsGain},
	{path: "inference.failed_replicates", why: "bootstrap replicates of the released Λ2 that lost a direction"},
	{path: "inference.dropped_replicates", why: "bootstrap replicates of the released Λ2 in which a direction fell below its identification floor (inference.Intervals.Dropped)"},
	{path: "inference.coefficients[].p_value", why: "bootstrap p-value of coefficient = 0 around the released objective"},
	{path: "inference.diagnosis", why: "why coefficients are unidentified: eigen-directions of the released Λ2 (post-processing of released values; inference.Diagnosis)"},
	{path: "inference.target_moment", why: "the released noisy Λ0 (Laplace, composed into the report)"},
	{path: "inference.robust_scale", why: "the released noisy residual summary of irls (Laplace, composed into the report)"},
}

// userOutput is what a user receives from one fit, as text.
type userOutput struct {
	text  string // the privacy report and the warnings, as printed
	model string // the model file (indented JSON)
}

// inferenceSection is the model file's inference section as `dplearn fit`
// writes it: the intervals and the extra release they need.
type inferenceSection struct {
	*inference.Intervals
	TargetMoment *float64             `json:"target_moment,omitempty"`
	RobustScale  *regress.RobustScale `json:"robust_scale,omitempty"`
	Unavailable  string               `json:"unavailable,omitempty"`
}

// receive fits and returns the user's output with the released fields
// masked (releasedFields).
func receive(est regress.Estimator, data regress.Data, cfg regress.Config, s *schema.Schema) (userOutput, error) {
	res, err := est.Fit(context.Background(), data, cfg)
	if err != nil {
		return userOutput{}, err
	}
	// The one released figure the report quotes, Result.Trimmed, must be
	// what the post-processing gives on the released objective alone.
	if res.Released != nil {
		_, tr, err := res.Released.Objective.Minimize(res.Released.PostProcess())
		if err != nil {
			return userOutput{}, err
		}
		if tr != res.Trimmed {
			return userOutput{}, fmt.Errorf("Result.Trimmed = %d, but the released objective's post-processing trims %d: not a function of released values", res.Trimmed, tr)
		}
	}
	// The coefficient table's intervals, as cmd/dplearn computes them
	// (coeftable.go): a 5% release of Λ0 (linear FM family) or of the
	// residual summary (irls), composed into the report.
	sec := inferenceSection{}
	opt := inference.Options{Replicates: 200}
	switch {
	case res.Released == nil:
		sec.Unavailable = "the fit released no objective"
	case res.Released.Kind == regress.Robust: // irls
		rs, rel, err := regress.ReleaseRobustScale(data.Rows, data.Stats.K(), res.Coef, res.Released.ResidualFloor, 0.05, cfg.Source)
		if err != nil {
			return userOutput{}, err
		}
		res.Privacy.Releases = append(res.Privacy.Releases, rel)
		if sec.Intervals, err = inference.IRLS(res.Released, rs, opt); err != nil {
			return userOutput{}, err
		}
		sec.RobustScale = &rs
	case cfg.LogisticApprox != "" || cfg.SolveRadius > 0:
		sec.Unavailable = "derived for the unconstrained Taylor objective only"
	case cfg.Kind == regress.Linear:
		v, rel, err := regress.ReleaseTargetMoment(data.Stats, 0.05, cfg.Source)
		if err != nil {
			return userOutput{}, err
		}
		res.Privacy.Releases = append(res.Privacy.Releases, rel)
		if sec.Intervals, err = inference.FM(res.Released, &inference.TargetMoment{Value: v}, opt); err != nil {
			return userOutput{}, err
		}
		sec.TargetMoment = &v
	default:
		if sec.Intervals, err = inference.FM(res.Released, nil, opt); err != nil {
			return userOutput{}, err
		}
	}
	model, err := regress.NewModel(cfg.Kind, s, res, regress.Training{Rows: data.Stats.N()})
	if err != nil {
		return userOutput{}, err
	}
	// The model file's inference section is package fit's table; this
	// test's own section (the intervals themselves) takes its place.
	secJSON, err := json.Marshal(sec)
	if err != nil {
		return userOutput{}, err
	}
	rf := released{trimmed: res.Trimmed, d: len(res.Coef)}
	var text strings.Builder
	if err := model.Privacy.WriteText(&text); err != nil {
		return userOutput{}, err
	}
	for _, w := range model.Training.Warnings {
		fmt.Fprintf(&text, "warning: %s\n", w)
	}
	out := userOutput{text: text.String()}
	for _, f := range releasedFields {
		if f.canon != nil {
			out.text = f.canon(out.text, rf)
		}
	}
	raw, err := json.Marshal(model)
	if err != nil {
		return userOutput{}, err
	}
	var tree any
	if err := json.Unmarshal(raw, &tree); err != nil {
		return userOutput{}, err
	}
	var secTree any
	if err := json.Unmarshal(secJSON, &secTree); err != nil {
		return userOutput{}, err
	}
	tree.(map[string]any)["inference"] = secTree
	tree = maskReleased(tree, "", rf)
	js, err := json.MarshalIndent(tree, "", "  ")
	if err != nil {
		return userOutput{}, err
	}
	out.model = string(js)
	return out, nil
}

// maskReleased replaces the values at releasedFields' paths in a decoded
// JSON tree.
func maskReleased(v any, path string, rf released) any {
	for _, f := range releasedFields {
		if f.path != path {
			continue
		}
		if f.canon == nil {
			return "⟨released: " + f.path + "⟩"
		}
		if s, ok := v.(string); ok {
			return f.canon(s, rf)
		}
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			p := k
			if path != "" {
				p = path + "." + k
			}
			x[k] = maskReleased(e, p, rf)
		}
	case []any:
		for i, e := range x {
			x[i] = maskReleased(e, path+"[]", rf)
		}
	}
	return v
}

// lineDiff lists the lines of a and b that differ (in order).
func lineDiff(a, b string) string {
	la, lb := strings.Split(a, "\n"), strings.Split(b, "\n")
	var out []string
	for i := 0; i < len(la) || i < len(lb); i++ {
		var x, y string
		if i < len(la) {
			x = la[i]
		}
		if i < len(lb) {
			y = lb[i]
		}
		if x != y {
			out = append(out, fmt.Sprintf("  line %d:\n    A: %s\n    other: %s", i+1, x, y))
		}
		if len(out) == 8 {
			out = append(out, "  …")
			break
		}
	}
	return strings.Join(out, "\n")
}

// neighbours holds a schema and three encoded datasets of one size: A, its
// neighbour A′ and an independent B.
type neighbours struct {
	schema *schema.Schema
	data   [3]regress.Data
}

// loadNeighbours encodes the first n records of an example table (A), the
// same with its first record replaced by extreme (A′), and the next n
// records (B).
func loadNeighbours(t *testing.T, file, schemaName string, n int, extreme string) neighbours {
	t.Helper()
	b, err := exampledata.Schema(schemaName)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exampledata.File(file)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimRight(string(raw), "\n"), "\n")
	if len(lines) < 2*n+1 {
		t.Fatalf("%s has %d records, need %d", file, len(lines)-1, 2*n)
	}
	header := lines[0]
	recs := lines[1:]
	sets := [3][]string{
		recs[:n],
		append([]string{extreme}, recs[1:n]...),
		recs[n : 2*n],
	}
	var out neighbours
	out.schema = s
	for i, set := range sets {
		csv := header + "\n" + strings.Join(set, "\n") + "\n"
		tb, _, err := dataset.LoadReader(context.Background(), bytes.NewReader([]byte(csv)), file, s, dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if tb.N() != n {
			t.Fatalf("%s: %d rows encoded, want %d", file, tb.N(), n)
		}
		m := suffstat.New(tb.K)
		if err := m.AddRows(tb.Rows); err != nil {
			t.Fatal(err)
		}
		out.data[i] = regress.Data{Stats: m, Rows: tb.Rows}
	}
	if equalRows(out.data[0].Rows, out.data[1].Rows) {
		t.Fatalf("%s: the extreme record encodes like the first one", file)
	}
	return out
}

func equalRows(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestReleasedFieldsDocumented keeps the whitelist honest: each entry has a
// reason and a distinct path.
func TestReleasedFieldsDocumented(t *testing.T) {
	seen := map[string]bool{}
	for _, f := range releasedFields {
		if f.why == "" || seen[f.path] {
			t.Errorf("releasedFields: %q without a reason or listed twice", f.path)
		}
		seen[f.path] = true
	}
}
