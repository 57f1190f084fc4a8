package describe

import (
	"bytes"
	"fmt"
	"math"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// PNG draws every released histogram (one panel per column and group) with
// its 95% error bars, as a PNG image. It plots released values only.
func (r *Result) PNG() ([]byte, error) {
	n := len(r.Columns)
	if n == 0 {
		return nil, fmt.Errorf("describe: nothing to plot")
	}
	cols := min(n, 3)
	rows := (n + cols - 1) / cols
	const w, h = 4 * vg.Inch, 3 * vg.Inch
	img := vgimg.New(w*vg.Length(cols), h*vg.Length(rows))
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: rows, Cols: cols}
	plots := make([][]*plot.Plot, rows)
	for i := range plots {
		plots[i] = make([]*plot.Plot, cols)
	}
	for i, c := range r.Columns {
		p := plot.New()
		p.Title.Text = c.Column
		if c.Group != "" {
			p.Title.Text += " | " + r.By + " = " + c.Group
		}
		p.Y.Label.Text = "noisy count (95% bars)"
		vals := make(plotter.Values, len(c.Histogram))
		errs := make(plotter.YErrors, len(c.Histogram))
		xy := make(plotter.XYs, len(c.Histogram))
		names := make([]string, len(c.Histogram))
		for j, b := range c.Histogram {
			vals[j] = float64(b.Count)
			errs[j].Low, errs[j].High = float64(b.Half), float64(b.Half)
			xy[j].X, xy[j].Y = float64(j), float64(b.Count)
			names[j] = b.Label
		}
		bars, err := plotter.NewBarChart(vals, vg.Points(12))
		if err != nil {
			return nil, err
		}
		p.Add(bars)
		eb, err := plotter.NewYErrorBars(struct {
			plotter.XYs
			plotter.YErrors
		}{xy, errs})
		if err != nil {
			return nil, err
		}
		p.Add(eb)
		p.NominalX(names...)
		p.X.Tick.Label.Rotation = math.Pi / 4
		p.X.Tick.Label.XAlign = draw.XRight
		plots[i/cols][i%cols] = p
	}
	canvases := plot.Align(plots, tiles, dc)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	var buf bytes.Buffer
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(&buf); err != nil {
		return nil, fmt.Errorf("describe: png: %w", err)
	}
	return buf.Bytes(), nil
}
