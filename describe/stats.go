package describe

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
)

// Data accumulates the exact (private) statistics of a table. Add rows with
// Add, then call Release once.
type Data struct {
	opt      Options
	cols     []Column
	use      []int // indices of described columns
	by       int   // index of the By column, −1 for none
	groups   int
	dec      *decoder
	rows     int64 // records read, including dropped ones (public)
	mayDrop  bool  // the schema may drop records: counts are private
	n        []int64
	sum, sq  [][]float64 // [col][group] centred sums
	grid     []*gridCounts
	gridByG  [][]*gridCounts // [col][group]
	hist     [][]int64       // [col][group*bins + bin]
	gridsOf  [][]float64
	released bool
	units    int64 // SetUnits: the public number of units (privacy unit)
}

// New prepares the accumulation for schema s.
func New(s *schema.Schema, opt Options) (*Data, error) {
	opt.defaults()
	cols := Columns(s)
	if err := opt.validate(cols); err != nil {
		return nil, err
	}
	d := &Data{opt: opt, cols: cols, by: -1, groups: 1, dec: newDecoder(s, cols), mayDrop: s.DropsRecords()}
	for i, c := range cols {
		if c.Name == opt.By {
			d.by = i
			d.groups = len(c.Levels)
		}
	}
	want := map[string]bool{}
	for _, n := range opt.Columns {
		want[n] = true
	}
	for i, c := range cols {
		if len(want) == 0 || want[c.Name] || i == d.by {
			d.use = append(d.use, i)
		}
	}
	g := d.groups
	d.n = make([]int64, g)
	d.sum = make([][]float64, len(cols))
	d.sq = make([][]float64, len(cols))
	d.gridByG = make([][]*gridCounts, len(cols))
	d.hist = make([][]int64, len(cols))
	d.gridsOf = make([][]float64, len(cols))
	for _, i := range d.use {
		c := cols[i]
		if c.Numeric {
			d.sum[i] = make([]float64, g)
			d.sq[i] = make([]float64, g)
			grid := make([]float64, opt.Grid)
			for j := range grid {
				grid[j] = c.Lo + float64(j)*(c.Hi-c.Lo)/float64(opt.Grid-1)
			}
			grid[opt.Grid-1] = c.Hi
			d.gridsOf[i] = grid
			for range g {
				d.gridByG[i] = append(d.gridByG[i], newGridCounts(grid))
			}
			d.hist[i] = make([]int64, g*opt.Bins)
		} else {
			d.hist[i] = make([]int64, g*len(c.Levels))
		}
	}
	return d, nil
}

// Add adds one encoded row (schema layout); dropped marks the zero row of
// a record dropped for a missing value (it counts in N only).
func (d *Data) Add(row []float64, dropped bool) {
	d.rows++
	if dropped {
		return
	}
	grp := 0
	if d.by >= 0 {
		grp = int(d.dec.value(row, d.by))
	}
	d.n[grp]++
	for _, i := range d.use {
		c := d.cols[i]
		v := d.dec.value(row, i)
		if !c.Numeric {
			d.hist[i][grp*len(c.Levels)+int(v)]++
			continue
		}
		mid := (c.Lo + c.Hi) / 2
		x := v - mid
		d.sum[i][grp] += x
		d.sq[i][grp] += x * x
		// histogram bin
		bins := d.opt.Bins
		b := int(math.Floor((v - c.Lo) / (c.Hi - c.Lo) * float64(bins)))
		b = min(max(b, 0), bins-1)
		d.hist[i][grp*bins+b]++
		// nearest grid point
		m := d.opt.Grid
		j := int(math.Round((v - c.Lo) / (c.Hi - c.Lo) * float64(m-1)))
		j = min(max(j, 0), m-1)
		d.gridByG[i][grp].eq[j]++
	}
}

// Stat is one released statistic with its 95% error bar [Lo, Hi].
type Stat struct {
	Value float64 `json:"value"`
	Lo    float64 `json:"lo"`
	Hi    float64 `json:"hi"`
	// Scale is the noise scale of the release behind it (Laplace scale, or
	// for a quantile the exponential mechanism's ε).
	Scale float64 `json:"noise_scale"`
}

// Quantile is one released quantile: a grid point, and the rank half-width
// t of its 95% error bar (the point is a q′-quantile of the grid-rounded
// data for some |q′ − Q| ≤ LevelError).
type Quantile struct {
	Q          float64 `json:"q"`
	Value      float64 `json:"value"`
	RankError  float64 `json:"rank_error"`
	LevelError float64 `json:"level_error"`
	Epsilon    float64 `json:"epsilon"`
}

// Bin is one histogram cell.
type Bin struct {
	Label string  `json:"label"`
	Lo    float64 `json:"lo,omitempty"`
	Hi    float64 `json:"hi,omitempty"`
	Count int64   `json:"count"`
	Half  int64   `json:"half_width"`
}

// ColumnStats holds the releases of one column in one group.
type ColumnStats struct {
	Column    string     `json:"column"`
	Group     string     `json:"group,omitempty"`
	Numeric   bool       `json:"numeric"`
	Mean      *Stat      `json:"mean,omitempty"`
	SD        *Stat      `json:"sd,omitempty"`
	Quantiles []Quantile `json:"quantiles,omitempty"`
	Histogram []Bin      `json:"histogram"`
	HistScale float64    `json:"histogram_noise_scale"`
}

// Part is one release in the privacy accounting.
type Part struct {
	What        string  `json:"what"`
	Column      string  `json:"column,omitempty"`
	Epsilon     float64 `json:"epsilon"`
	Sensitivity float64 `json:"sensitivity"`
	Mechanism   string  `json:"mechanism"`
}

// Result is the whole release.
type Result struct {
	Rows    int64         `json:"rows"`
	NPublic bool          `json:"n_public"`
	By      string        `json:"by,omitempty"`
	Groups  []string      `json:"groups,omitempty"`
	Counts  []Stat        `json:"counts"`
	Columns []ColumnStats `json:"columns"`
	Parts   []Part        `json:"releases"`
	Epsilon float64       `json:"epsilon"`
	Delta   float64       `json:"delta"`
	// Unit and MaxRowsPerUnit name the privacy unit and K when the
	// guarantee is per person; Rows is then the number of units.
	Unit           string `json:"privacy_unit,omitempty"`
	MaxRowsPerUnit int    `json:"max_rows_per_unit,omitempty"`
	Accountant     string `json:"accountant"`
	Noise          string `json:"noise_source"`
}

// releases counts the releases the budget is split over.
func (d *Data) releases() int {
	k := 0
	if d.countsPrivate() {
		k++
	}
	for _, i := range d.use {
		if i == d.by {
			continue // its histogram is the group counts
		}
		if d.cols[i].Numeric {
			k += 3 + len(d.opt.Quantiles) // sum, sum of squares, histogram, quantiles
		} else {
			k++
		}
	}
	return k
}

func (d *Data) countsPrivate() bool { return d.groups > 1 || d.mayDrop || d.opt.MaxRowsPerUnit > 0 }

// SetUnits records the public number of units read under a privacy unit.
func (d *Data) SetUnits(n int64) { d.units = n }

// unitFactor is K = Options.MaxRowsPerUnit under a privacy unit, else 1.
// Every sensitivity below is derived for one record replaced. A unit of
// r ≤ K records replaced by one of r' ≤ K: pair min(r, r') of them as
// replacements and count the rest as records present in one table only;
// such a record moves each release by at most its replace sensitivity (a
// count by 1 ≤ countSens, a centred sum by w/2 ≤ w, a sum of squares by
// w²/4 ≤ sqSens, a histogram by 1 ≤ 2, a quantile score by 1, see
// quantileScores), so the release moves by at most max(r, r') ≤ K times
// its replace sensitivity: each is multiplied by unitFactor.
func (d *Data) unitFactor() int64 {
	if d.opt.MaxRowsPerUnit > 0 {
		return int64(d.opt.MaxRowsPerUnit)
	}
	return 1
}

// Release draws the noise and returns the statistics. It may be called once.
func (d *Data) Release(src noise.Source) (*Result, error) {
	if d.released {
		return nil, fmt.Errorf("describe: statistics already released")
	}
	d.released = true
	if d.rows == 0 {
		return nil, errNoRows
	}
	if d.opt.MaxRowsPerUnit > 0 && d.units < 1 {
		return nil, fmt.Errorf("describe: privacy unit %q: the number of units was not set (SetUnits)", d.opt.PrivacyUnit)
	}
	kf := d.unitFactor()
	k := d.releases()
	if k == 0 {
		return nil, fmt.Errorf("describe: nothing to release")
	}
	eps := splitEpsilon(d.opt.Epsilon, k)
	G := d.groups
	res := &Result{Rows: d.rows, NPublic: !d.countsPrivate(), Noise: src.String()}
	if kf > 1 || d.opt.MaxRowsPerUnit > 0 {
		// The number of records is private: only the units are public.
		res.Rows, res.Unit, res.MaxRowsPerUnit = d.units, d.opt.PrivacyUnit, d.opt.MaxRowsPerUnit
	}
	var parts []accounting.EpsDelta
	add := func(p Part) {
		res.Parts = append(res.Parts, p)
		parts = append(parts, accounting.EpsDelta{Epsilon: p.Epsilon})
	}
	// Group counts.
	nHat := make([]float64, G)
	nHalf := 0.0
	if d.countsPrivate() {
		sens := countSens(G) * kf
		c := append([]int64(nil), d.n...)
		scale, half, err := countRelease(src, c, eps, sens)
		if err != nil {
			return nil, err
		}
		add(Part{What: "record counts", Column: d.opt.By, Epsilon: eps, Sensitivity: float64(sens), Mechanism: "discrete Laplace"})
		nHalf = float64(half)
		for g := range G {
			nHat[g] = float64(c[g])
			res.Counts = append(res.Counts, Stat{Value: float64(c[g]), Lo: float64(c[g] - half), Hi: float64(c[g] + half), Scale: scale})
		}
	} else {
		nHat[0] = float64(d.rows)
		res.Counts = []Stat{{Value: float64(d.rows), Lo: float64(d.rows), Hi: float64(d.rows)}}
	}
	if d.by >= 0 {
		res.By = d.opt.By
		res.Groups = d.cols[d.by].Levels
	}
	// Per column.
	for _, i := range d.use {
		c := d.cols[i]
		if i == d.by {
			continue
		}
		stats := make([]ColumnStats, G)
		for g := range G {
			stats[g] = ColumnStats{Column: c.Name, Numeric: c.Numeric}
			if d.by >= 0 {
				stats[g].Group = res.Groups[g]
			}
		}
		if c.Numeric {
			if err := d.releaseNumeric(src, i, eps, nHat, nHalf, stats, add); err != nil {
				return nil, fmt.Errorf("describe: column %q: %w", c.Name, err)
			}
		}
		// Histogram.
		h := append([]int64(nil), d.hist[i]...)
		scale, half, err := countRelease(src, h, eps, histSens*kf)
		if err != nil {
			return nil, fmt.Errorf("describe: column %q: %w", c.Name, err)
		}
		add(Part{What: "histogram", Column: c.Name, Epsilon: eps, Sensitivity: float64(histSens * kf), Mechanism: "discrete Laplace"})
		nb := len(h) / G
		for g := range G {
			stats[g].HistScale = scale
			for b := range nb {
				bin := Bin{Count: h[g*nb+b], Half: half}
				if c.Numeric {
					w := (c.Hi - c.Lo) / float64(nb)
					bin.Lo, bin.Hi = c.Lo+float64(b)*w, c.Lo+float64(b+1)*w
					if b == nb-1 {
						bin.Hi = c.Hi
					}
					bin.Label = fmt.Sprintf("[%.4g, %.4g%s", bin.Lo, bin.Hi, map[bool]string{true: "]", false: ")"}[b == nb-1])
				} else {
					bin.Label = c.Levels[b]
				}
				stats[g].Histogram = append(stats[g].Histogram, bin)
			}
		}
		res.Columns = append(res.Columns, stats...)
	}
	total, err := accounting.BasicComposition(parts...)
	if err != nil {
		return nil, err
	}
	res.Epsilon, res.Delta = total.Epsilon, total.Delta
	res.Accountant = fmt.Sprintf("basic composition of %d pure ε-DP releases (ε = Σ εᵢ, δ = 0)", len(parts))
	return res, nil
}

func (d *Data) releaseNumeric(src noise.Source, i int, eps float64, nHat []float64, nHalf float64, stats []ColumnStats, add func(Part)) error {
	c := d.cols[i]
	G := d.groups
	w := c.Hi - c.Lo
	mid := (c.Lo + c.Hi) / 2
	private := d.countsPrivate()
	// β per component of the box intervals.
	betaMean, betaSD := 1-Level, (1-Level)/2
	if private {
		betaMean, betaSD = (1-Level)/2, (1-Level)/3
	}
	// Sums: the release is one vector; its bars at two levels come from
	// the same draw, so compute both half-widths from its scale and grid.
	s := append([]float64(nil), d.sum[i]...)
	kf := float64(d.unitFactor())
	sScale, sHalfMean, err := sumRelease(src, s, eps, sumSens(w)*kf, betaMean)
	if err != nil {
		return err
	}
	sHalfSD := halfAt(sScale, len(s), betaSD)
	add(Part{What: "sum", Column: c.Name, Epsilon: eps, Sensitivity: sumSens(w) * kf, Mechanism: "Laplace (grid)"})
	qsens := sqSens(w, G) * kf
	q := append([]float64(nil), d.sq[i]...)
	qScale, qHalf, err := sumRelease(src, q, eps, qsens, betaSD)
	if err != nil {
		return err
	}
	add(Part{What: "sum of squares", Column: c.Name, Epsilon: eps, Sensitivity: qsens, Mechanism: "Laplace (grid)"})
	nHalfMean, nHalfSD := 0.0, 0.0
	if private {
		nHalfMean = float64(nHalfFor(nHalf, eps, G, betaMean, d.unitFactor()))
		nHalfSD = float64(nHalfFor(nHalf, eps, G, betaSD, d.unitFactor()))
	}
	for g := range G {
		n := nHat[g]
		// Mean.
		mean := clampDiv(s[g], n, w/2)
		lo, hi := ratioRange(s[g]-sHalfMean, s[g]+sHalfMean, n-nHalfMean, n+nHalfMean, w/2)
		stats[g].Mean = &Stat{Value: mid + mean, Lo: mid + lo, Hi: mid + hi, Scale: sScale}
		// Standard deviation.
		v := variance(s[g], q[g], n, w)
		vlo, vhi := varRange(s[g]-sHalfSD, s[g]+sHalfSD, q[g]-qHalf, q[g]+qHalf, n-nHalfSD, n+nHalfSD, w)
		stats[g].SD = &Stat{Value: math.Sqrt(v), Lo: math.Sqrt(vlo), Hi: math.Sqrt(vhi), Scale: qScale}
	}
	// Quantiles: each group's mechanism at ε (G = 1) or ε/2 (G ≥ 2, a
	// record can change two groups).
	qe := eps
	if G > 1 {
		qe = eps / 2
	}
	for _, qq := range d.opt.Quantiles {
		add(Part{What: fmt.Sprintf("quantile %g", qq), Column: c.Name, Epsilon: eps, Sensitivity: kf, Mechanism: "exponential mechanism"})
		t := EMRankBound(d.opt.Grid, qe, kf, 1-Level)
		for g := range G {
			cnt := d.gridByG[i][g]
			v, err := quantileRelease(src, cnt, qq, cnt.n(), qe, kf)
			if err != nil {
				return err
			}
			le := 1.0 // no information: the bar spans every quantile level
			if nHat[g]-nHalf > 0 {
				le = min(t/(nHat[g]-nHalf), 1)
			}
			stats[g].Quantiles = append(stats[g].Quantiles, Quantile{Q: qq, Value: v, RankError: t, LevelError: le, Epsilon: qe})
		}
	}
	return nil
}

// halfAt is sumRelease's half-width for another β (same scale and length).
func halfAt(b float64, n int, beta float64) float64 {
	g, err := noise.LaplaceGrid(b, n)
	if err != nil {
		return math.Inf(1)
	}
	k := geoHalfWidth(b/g, beta)
	return math.Nextafter(g*(float64(k)+0.5), math.Inf(1))
}

// nHalfFor recomputes the count half-width at level β.
func nHalfFor(_ float64, eps float64, G int, beta float64, kf int64) int64 {
	return geoHalfWidth(float64(countSens(G)*kf)/eps, beta)
}

// The L1 sensitivities of the releases under replace-one neighbours (see
// the package documentation); TestSensitivitiesExtremal checks each on
// extremal neighbouring pairs.

// countSens: the vector of G group counts (kept records when G = 1): a
// record moved between groups lowers one count and raises another (2); with
// one group a record kept in one table and dropped in the other changes it
// by 1.
func countSens(G int) int64 {
	if G > 1 {
		return 2 // a record moved between groups
	}
	return 1
}

// sumSens: the vector of centred sums Σ(x − c), |x − c| ≤ w/2: w within a
// group (−w/2 to w/2), w/2 + w/2 across two groups.
func sumSens(w float64) float64 { return w }

// sqSens: the vector of centred sums of squares, each term in [0, w²/4]:
// w²/4 within a group, w²/4 in each of two groups when the record moves.
func sqSens(w float64, G int) float64 {
	if G > 1 {
		return w * w / 2
	}
	return w * w / 4
}

// histSens: a histogram over (group, bin) cells: one cell down, one up.
const histSens = 2

// clampDiv returns s/n clamped to [−r, r] (0 when n ≤ 0).
func clampDiv(s, n, r float64) float64 {
	if n <= 0 {
		return 0
	}
	return min(max(s/n, -r), r)
}

// ratioRange returns the range of s/m over s ∈ [s1, s2], m ∈ [m1, m2]
// (m clamped to ≥ 1), clamped to [−r, r].
func ratioRange(s1, s2, m1, m2, r float64) (lo, hi float64) {
	m1, m2 = max(m1, 1), max(m2, 1)
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, s := range []float64{s1, s2} {
		for _, m := range []float64{m1, m2} {
			v := s / m
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	return min(max(lo, -r), r), min(max(hi, -r), r)
}

// variance returns q/n − (s/n)² clamped to [0, w²/4].
func variance(s, q, n, w float64) float64 {
	if n <= 0 {
		return 0
	}
	v := q/n - (s/n)*(s/n)
	return min(max(v, 0), w*w/4)
}

// varRange returns the range of q/m − (s/m)² over the box, clamped to
// [0, w²/4]. For fixed m the maximum takes the largest q and the s of
// least |s|, the minimum the least q and the s of largest |s|; over m the
// function f(m) = q/m − s²/m² has one critical point m = 2s²/q, so the
// extremes lie at the ends of [m1, m2] or there.
func varRange(s1, s2, q1, q2, m1, m2, w float64) (lo, hi float64) {
	m1, m2 = max(m1, 1), max(m2, 1)
	sMin := 0.0
	if s1 > 0 {
		sMin = s1
	} else if s2 < 0 {
		sMin = -s2
	}
	sMax := max(math.Abs(s1), math.Abs(s2))
	q1 = max(q1, 0)
	q2 = max(q2, 0)
	ms := func(s, q float64) []float64 {
		out := []float64{m1, m2}
		if q > 0 {
			if c := 2 * s * s / q; c > m1 && c < m2 {
				out = append(out, c)
			}
		}
		return out
	}
	f := func(s, q, m float64) float64 { return q/m - (s/m)*(s/m) }
	hi = math.Inf(-1)
	for _, m := range ms(sMin, q2) {
		hi = max(hi, f(sMin, q2, m))
	}
	lo = math.Inf(1)
	for _, m := range ms(sMax, q1) {
		lo = min(lo, f(sMax, q1, m))
	}
	clamp := func(v float64) float64 { return min(max(v, 0), w*w/4) }
	return clamp(lo), clamp(hi)
}
