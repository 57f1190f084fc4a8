package experiment

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"os"
	"sort"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// panel is one sub-figure: a metric against x for several series, with an
// optional second quantity on a right-hand axis.
type panel struct {
	id             string // key of the rows in the results
	title          string
	xlabel, ylabel string
	logX, logY     bool
	// symlogY maps y by sign(y)·log10(1 + |y|): log-like for values of
	// either sign (log-likelihoods).
	symlogY bool
	// robust plots the median over runs with interquartile bars instead
	// of the mean ± sd (heavy-tailed metrics).
	robust bool
	metric string
	series []string // drawn in this order when present
	// right, when non-empty, is drawn against a right-hand axis: rows of
	// (rightSeries, right metric).
	right, rightSeries, rightLabel string
}

// figure is a grid of panels saved as one PNG and one SVG.
type figure struct {
	cols   int
	panels []panel
	// caption is printed under the figure in the summary.
	caption string
	// robust: the panels show medians and interquartile ranges.
	robust bool
	// note replaces the error-bar note under the legend.
	note string
}

// style of each series, fixed so every figure uses the same colours.
type seriesStyle struct {
	c      color.Color
	dashes []vg.Length
	glyph  draw.GlyphDrawer
}

var palette = []color.Color{
	color.RGBA{0, 0, 0, 255},       // black
	color.RGBA{214, 39, 40, 255},   // red
	color.RGBA{31, 119, 180, 255},  // blue
	color.RGBA{44, 160, 44, 255},   // green
	color.RGBA{148, 103, 189, 255}, // purple
	color.RGBA{255, 127, 14, 255},  // orange
	color.RGBA{140, 86, 75, 255},   // brown
	color.RGBA{23, 190, 207, 255},  // cyan
	color.RGBA{127, 127, 127, 255}, // grey
	color.RGBA{188, 189, 34, 255},  // olive
}

var glyphs = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.PlusGlyph{}, draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{},
}

// knownStyles fixes the palette index of each mechanism's series, so every
// figure draws a mechanism in the same colour.
var knownStyles = map[string]int{
	"nonprivate": 0, "gaussian-fm": 2, "fm": 1, "relaxed-fm": 3, "objpert": 4,
	"noisygd": 5, "truncated": 8, "noisygd (overall ε matched)": 6,
	"gaussian-fm (as published)": 7, "relaxed-fm (as published)": 9,
}

// assignStyles gives each series of one figure its style: a mechanism its
// fixed colour, any other series the first palette colour that no other
// series of the figure uses, so no two series of a figure share a colour
// (while there are colours left: the palette has ten).
func assignStyles(names []string) map[string]seriesStyle {
	used := map[int]bool{}
	for _, n := range names {
		if i, ok := knownStyles[n]; ok {
			used[i] = true
		}
	}
	out := map[string]seriesStyle{}
	next := 0
	for k, n := range names {
		i, ok := knownStyles[n]
		if !ok {
			for next < len(palette) && used[next] {
				next++
			}
			if next < len(palette) {
				i = next
				used[i] = true
			} else {
				i = k % len(palette)
			}
		}
		out[n] = styleFor(n, i)
	}
	return out
}

// styleFor returns the style of a series drawn in palette colour i.
func styleFor(name string, i int) seriesStyle {
	s := seriesStyle{c: palette[i], glyph: glyphs[i%len(glyphs)]}
	if name == "nonprivate" || name == "truncated" {
		s.dashes = []vg.Length{vg.Points(6), vg.Points(3)}
	}
	if len(name) > 14 && name[len(name)-14:] == "(as published)" {
		s.dashes = []vg.Length{vg.Points(2), vg.Points(2)}
	}
	return s
}

// render draws fig from the aggregated rows and writes base.png and
// base.svg.
func render(fig figure, title string, res *Aggregate, base string) ([]string, error) {
	cols := fig.cols
	if cols < 1 {
		cols = 1
	}
	rows := (len(fig.panels) + cols - 1) / cols
	panelW, panelH := 4.2*vg.Inch, 3.2*vg.Inch
	hasRight := false
	for _, p := range fig.panels {
		hasRight = hasRight || len(rightPoints(p, res)) > 0
	}
	rightMargin := vg.Length(0)
	if hasRight {
		rightMargin = 0.75 * vg.Inch
	}
	// Legend: the union of series, in panel order.
	var names []string
	seen := map[string]bool{}
	present := map[string]bool{}
	for _, p := range fig.panels {
		for _, s := range p.series {
			if res.has(p.id, s, p.metric) {
				present[s] = true
			}
		}
	}
	for _, p := range fig.panels {
		for _, s := range p.series {
			if !seen[s] && present[s] {
				seen[s] = true
				names = append(names, s)
			}
		}
	}
	styles := assignStyles(names)
	perCol := 3
	legendCols := (len(names) + perCol - 1) / perCol
	if hasRight {
		legendCols++
	}
	legendH := vg.Length(perCol)*0.2*vg.Inch + 0.15*vg.Inch
	titleH := 0.5 * vg.Inch
	W := vg.Length(cols) * (panelW + rightMargin)
	H := vg.Length(rows)*panelH + legendH + titleH

	plots := make([][]*plot.Plot, rows)
	for r := range plots {
		plots[r] = make([]*plot.Plot, cols)
	}
	for i, pn := range fig.panels {
		p, err := makePanel(pn, res, styles)
		if err != nil {
			return nil, err
		}
		plots[i/cols][i%cols] = p
	}
	draws := func(dc draw.Canvas) {
		// Title strip.
		top := draw.Crop(dc, 0, 0, H-titleH, 0)
		ts := plot.New().Title.TextStyle
		ts.Font.Size = vg.Points(14)
		ts.XAlign = draw.XCenter
		ts.YAlign = draw.YCenter
		top.FillText(ts, vg.Point{X: (top.Min.X + top.Max.X) / 2, Y: (top.Min.Y + top.Max.Y) / 2}, title)
		grid := draw.Crop(dc, 0, 0, legendH, -titleH)
		tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: rightMargin + vg.Points(6), PadY: vg.Points(8),
			PadLeft: vg.Points(4), PadRight: rightMargin + vg.Points(4), PadTop: vg.Points(4), PadBottom: vg.Points(4)}
		// Each panel in its own tile (plot.Align would align the data
		// areas but moves the panel titles to different heights).
		for r := range plots {
			for c := range plots[r] {
				if plots[r][c] != nil {
					plots[r][c].Draw(tiles.At(grid, c, r))
				}
			}
		}
		// Legend strip: columns of perCol entries.
		leg := draw.Crop(dc, 0, 0, 0, legendH-H)
		colW := min((leg.Max.X-leg.Min.X)/vg.Length(max(legendCols, 1)), 3.2*vg.Inch)
		for c := 0; c < legendCols; c++ {
			l := plot.NewLegend()
			l.Top, l.Left = true, true
			l.ThumbnailWidth = vg.Points(28)
			for k := c * perCol; k < min((c+1)*perCol, len(names)); k++ {
				st := styles[names[k]]
				ln, pts := lineAndPoints(nil, st)
				l.Add(names[k], ln, pts)
			}
			if hasRight && c == legendCols-1 {
				for _, pn := range fig.panels {
					if len(rightPoints(pn, res)) > 0 {
						ln, pts := rightStyle()
						l.Add(pn.rightSeries+" "+pn.rightLabel+" (right axis)", ln, pts)
						break
					}
				}
			}
			sub := leg
			sub.Min.X = leg.Min.X + vg.Length(c)*colW + vg.Points(10)
			sub.Max.X = sub.Min.X + colW
			sub.Max.Y -= vg.Points(6)
			l.Draw(sub)
		}
		note := "error bars: ±1 sd over runs; on log axes lower bars are cut at ¼ of the mean"
		if fig.robust {
			note = "points: median over runs; bars: interquartile range"
		}
		if fig.note != "" {
			note = fig.note
		}
		ns := plot.New().Legend.TextStyle
		ns.Font.Size = vg.Points(8)
		ns.XAlign = draw.XRight
		ns.YAlign = draw.YBottom
		leg.FillText(ns, vg.Point{X: leg.Max.X - vg.Points(6), Y: leg.Min.Y + vg.Points(3)},
			note)
	}
	var files []string
	img := vgimg.NewWith(vgimg.UseWH(W, H), vgimg.UseDPI(96))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	draws(dc)
	if err := writeCanvas(base+".png", vgimg.PngCanvas{Canvas: img}); err != nil {
		return nil, err
	}
	files = append(files, base+".png")
	svg := vgsvg.New(W, H)
	draws(draw.New(svg))
	if err := writeCanvas(base+".svg", svg); err != nil {
		return nil, err
	}
	return append(files, base+".svg"), nil
}

func writeCanvas(path string, c io.WriterTo) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	if _, err := c.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("experiment: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("experiment: write %s: %w", path, err)
	}
	return nil
}

func lineAndPoints(xy plotter.XYs, st seriesStyle) (*plotter.Line, *plotter.Scatter) {
	if xy == nil {
		xy = plotter.XYs{{X: 0, Y: 0}}
	}
	ln, _ := plotter.NewLine(xy)
	ln.LineStyle.Color = st.c
	ln.LineStyle.Width = vg.Points(1.3)
	ln.LineStyle.Dashes = st.dashes
	pts, _ := plotter.NewScatter(xy)
	pts.GlyphStyle.Color = st.c
	pts.GlyphStyle.Shape = st.glyph
	pts.GlyphStyle.Radius = vg.Points(2.5)
	return ln, pts
}

// rightColor draws the right-axis curve: magenta, a colour no series of
// the palette uses, so the curve is never mistaken for a mechanism.
var rightColor = color.RGBA{204, 0, 153, 255}

func rightStyle() (*plotter.Line, *plotter.Scatter) {
	return lineAndPoints(nil, seriesStyle{c: rightColor, dashes: []vg.Length{vg.Points(1.5), vg.Points(2.5)}, glyph: draw.PyramidGlyph{}})
}

// errXY implements plotter.XYer and plotter.YErrorer.
type errXY struct {
	plotter.XYs
	plotter.YErrors
}

func makePanel(pn panel, res *Aggregate, styles map[string]seriesStyle) (*plot.Plot, error) {
	p := plot.New()
	p.Title.Text = pn.title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = pn.xlabel
	p.Y.Label.Text = pn.ylabel
	if pn.logX {
		p.X.Scale = plot.LogScale{}
		p.X.Tick.Marker = logTicks{}
	}
	if pn.logY {
		p.Y.Scale = plot.LogScale{}
		p.Y.Tick.Marker = logTicks{}
	}
	if pn.symlogY {
		p.Y.Scale = symlog{}
		p.Y.Tick.Marker = symlog{}
	}
	p.Add(plotter.NewGrid())
	ok := func(x, y float64) bool {
		if math.IsNaN(x) || math.IsNaN(y) || math.IsInf(y, 0) {
			return false
		}
		return (!pn.logX || x > 0) && (!pn.logY || y > 0)
	}
	drawn := 0
	for _, s := range pn.series {
		pts := res.series(pn.id, s, pn.metric)
		var xy plotter.XYs
		var ye plotter.YErrors
		for _, r := range pts {
			if !ok(r.X, r.Mean) {
				continue
			}
			y, lo, hi := r.Mean, r.SD, r.SD
			if pn.robust {
				y, lo, hi = r.Median, r.Median-r.Q1, r.Q3-r.Median
				if !ok(r.X, y) {
					continue
				}
			}
			xy = append(xy, plotter.XY{X: r.X, Y: y})
			if pn.logY && y-lo < y/4 {
				// A bar below zero cannot be drawn on a log axis and a
				// tiny positive end stretches the axis over decades: cut
				// the lower bar at a quarter of the mean (noted in the
				// legend strip).
				lo = y * 0.75
			}
			ye = append(ye, struct{ Low, High float64 }{lo, hi})
		}
		if len(xy) == 0 {
			continue
		}
		st := styles[s]
		ln, sc := lineAndPoints(xy, st)
		p.Add(ln, sc)
		if anyPositive(ye) {
			eb, err := plotter.NewYErrorBars(errXY{xy, ye})
			if err != nil {
				return nil, fmt.Errorf("experiment: error bars of %s: %w", s, err)
			}
			eb.LineStyle.Color = st.c
			eb.CapWidth = vg.Points(4)
			p.Add(eb)
		}
		drawn++
	}
	if xy := rightPoints(pn, res); len(xy) > 0 {
		p.Add(&rightAxis{xy: xy, label: pn.rightLabel, logX: pn.logX})
	} else if v, ok := rightConstant(pn, res); ok {
		// A constant needs no axis: the title states it.
		p.Title.Text += fmt.Sprintf(" (%s %s = %.3g)", pn.rightSeries, pn.rightLabel, v)
	}
	if drawn == 0 {
		// An empty log axis has no positive range to draw.
		p.Title.Text += " (no data)"
		p.X.Scale, p.Y.Scale = plot.LinearScale{}, plot.LinearScale{}
		p.X.Tick.Marker, p.Y.Tick.Marker = plot.DefaultTicks{}, plot.DefaultTicks{}
	}
	return p, nil
}

func anyPositive(ye plotter.YErrors) bool {
	for _, e := range ye {
		if e.Low > 0 || e.High > 0 {
			return true
		}
	}
	return false
}

// rightCurve returns the panel's right-axis values that can be drawn
// (positive and finite, at drawable x).
func rightCurve(pn panel, res *Aggregate) plotter.XYs {
	if pn.right == "" {
		return nil
	}
	var xy plotter.XYs
	for _, r := range res.series(pn.id, pn.rightSeries, pn.right) {
		if (!pn.logX || r.X > 0) && !math.IsNaN(r.X) && !math.IsInf(r.X, 0) && r.Mean > 0 && !math.IsInf(r.Mean, 0) {
			xy = append(xy, plotter.XY{X: r.X, Y: r.Mean})
		}
	}
	return xy
}

// rightPoints returns the panel's right-axis curve when a secondary axis
// carries information, nil otherwise: not for a constant (rightConstant
// puts it in the title) and not for a curve equal to x at every point (the
// x axis already shows it).
func rightPoints(pn panel, res *Aggregate) plotter.XYs {
	xy := rightCurve(pn, res)
	if len(xy) == 0 {
		return nil
	}
	if _, ok := rightConstant(pn, res); ok {
		return nil
	}
	same := true
	for _, p := range xy {
		same = same && math.Abs(p.Y-p.X) <= 1e-9*math.Abs(p.X)
	}
	if same {
		return nil
	}
	return xy
}

// rightConstant reports whether the right-axis curve takes one value
// (to a relative 1e-9) at every point, and which.
func rightConstant(pn panel, res *Aggregate) (float64, bool) {
	xy := rightCurve(pn, res)
	if len(xy) == 0 {
		return 0, false
	}
	for _, p := range xy {
		if math.Abs(p.Y-xy[0].Y) > 1e-9*math.Abs(xy[0].Y) {
			return 0, false
		}
	}
	return xy[0].Y, true
}

// rightAxis draws a curve against its own scale on a right-hand axis, which
// gonum/plot lacks: it maps its values onto the data canvas itself and
// draws the axis line, ticks and labels just outside the right edge (the
// figure leaves a margin there).
type rightAxis struct {
	xy    plotter.XYs
	label string
	logX  bool
}

func (ra *rightAxis) Plot(c draw.Canvas, plt *plot.Plot) {
	trX, _ := plt.Transforms(&c)
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, p := range ra.xy {
		lo, hi = math.Min(lo, p.Y), math.Max(hi, p.Y)
	}
	logY := hi/lo > 30
	var scale plot.Normalizer = plot.LinearScale{}
	var marker plot.Ticker = plot.DefaultTicks{}
	if logY {
		scale, marker = plot.LogScale{}, logTicks{}
		lo, hi = lo/1.3, hi*1.3
	} else {
		pad := 0.08 * (hi - lo)
		if pad == 0 {
			pad = 0.1 * math.Abs(hi)
		}
		lo, hi = math.Max(0, lo-pad), hi+pad
	}
	ticks := marker.Ticks(lo, hi)
	// Extend the range to the outer labelled ticks so the axis reads well.
	for _, t := range ticks {
		if t.Label != "" {
			lo, hi = math.Min(lo, t.Value), math.Max(hi, t.Value)
		}
	}
	trY := func(v float64) vg.Length {
		return c.Min.Y + vg.Length(scale.Normalize(lo, hi, v))*(c.Max.Y-c.Min.Y)
	}
	ln, sc := rightStyle()
	pts := make([]vg.Point, len(ra.xy))
	for i, p := range ra.xy {
		pts[i] = vg.Point{X: trX(p.X), Y: trY(p.Y)}
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i].X < pts[j].X })
	c.StrokeLines(ln.LineStyle, pts)
	for _, pt := range pts {
		c.DrawGlyph(sc.GlyphStyle, pt)
	}
	// Axis.
	x0 := c.Max.X
	axis := draw.LineStyle{Color: rightColor, Width: vg.Points(1)}
	c.StrokeLine2(axis, x0, c.Min.Y, x0, c.Max.Y)
	lab := plt.Y.Tick.Label
	lab.Color = rightColor
	lab.XAlign = draw.XLeft
	lab.YAlign = draw.YCenter
	maxW := vg.Length(0)
	for _, t := range ticks {
		if t.Value < lo || t.Value > hi {
			continue
		}
		y := trY(t.Value)
		l := vg.Points(2)
		if t.Label != "" {
			l = vg.Points(5)
			c.FillText(lab, vg.Point{X: x0 + vg.Points(7), Y: y}, t.Label)
			maxW = max(maxW, lab.Width(t.Label))
		}
		c.StrokeLine2(axis, x0, y, x0+l, y)
	}
	ls := plt.Y.Label.TextStyle
	ls.Color = rightColor
	ls.Rotation = -math.Pi / 2
	ls.XAlign = draw.XCenter
	ls.YAlign = draw.YBottom
	c.FillText(ls, vg.Point{X: x0 + vg.Points(10) + maxW, Y: (c.Min.Y + c.Max.Y) / 2}, ra.label)
}

// logTicks labels powers of ten, and also 2× and 5× multiples when the
// range spans less than three decades (plot.LogTicks labels only powers of
// ten, which leaves short ranges unlabelled).
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(lo > 0) || !(hi > lo) {
		return nil
	}
	decades := math.Log10(hi / lo)
	mults := []float64{1}
	switch {
	case decades < 0.6:
		mults = []float64{1, 2, 3, 4, 5, 6, 7, 8, 9}
	case decades < 3:
		mults = []float64{1, 2, 5}
	}
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		p := math.Pow(10, e)
		for m := 1; m <= 9; m++ {
			v := float64(m) * p
			if v < lo*(1-1e-9) || v > hi*(1+1e-9) {
				continue
			}
			t := plot.Tick{Value: v}
			for _, k := range mults {
				if float64(m) == k {
					t.Label = tickLabel(v)
				}
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}

func tickLabel(v float64) string {
	if v >= 1 && v < 1e6 {
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

// symlog is a signed logarithmic scale and its ticker.
type symlog struct{}

func symlogF(v float64) float64 {
	return math.Copysign(math.Log10(1+math.Abs(v)), v)
}

func (symlog) Normalize(lo, hi, v float64) float64 {
	a, b := symlogF(lo), symlogF(hi)
	return (symlogF(v) - a) / (b - a)
}

func (symlog) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	add := func(v float64, label bool) {
		if v >= lo && v <= hi {
			t := plot.Tick{Value: v}
			if label {
				t.Label = tickLabel(math.Abs(v))
				if v < 0 {
					t.Label = "-" + t.Label
				}
				if v == 0 {
					t.Label = "0"
				}
			}
			ticks = append(ticks, t)
		}
	}
	add(0, true)
	top := math.Log10(math.Max(math.Abs(lo), math.Abs(hi)))
	step := int(math.Max(1, math.Ceil(top/5)))
	for e := 0; e <= 15; e++ {
		p := math.Pow(10, float64(e))
		lab := e%step == 0 && (top < 3 || e > 0)
		add(p, lab)
		add(-p, lab)
		for m := 2; m <= 9; m++ {
			add(float64(m)*p, false)
			add(-float64(m)*p, false)
		}
	}
	return ticks
}
