package bench

import (
	"fmt"
	"image/color"
	"io"
	"math"
	"slices"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// WriteChart draws the report as a PNG: one row per scenario measured at
// more than one concurrency (every scenario, if none was), with its
// throughput against clients, its p50/p95/p99 latency against clients
// (both axes logarithmic), and, where it has one, its ratio to its
// binding ceiling against clients; one colour per backend.
func (r *Report) WriteChart(w io.Writer) error {
	groups := r.chartGroups()
	if len(groups) == 0 {
		return fmt.Errorf("bench: no results to chart")
	}
	const (
		panelW = 5.2 * vg.Inch
		panelH = 2.9 * vg.Inch
		header = 0.45 * vg.Inch
	)
	plots := make([][]*plot.Plot, len(groups))
	cols := 2
	for i, g := range groups {
		plots[i] = []*plot.Plot{g.throughputPlot(), g.latencyPlot(), g.ratioPlot()}
		if plots[i][2] != nil {
			cols = 3
		}
	}
	for i := range plots {
		plots[i] = plots[i][:cols]
	}
	width, height := vg.Length(cols)*panelW, vg.Length(len(groups))*panelH+header
	img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(96), vgimg.UseBackgroundColor(color.White))
	dc := draw.New(img)

	title := fmt.Sprintf("flightns bench %s — %d CPUs, %s, Redis persistence %s, %s per measurement",
		r.StartedAt.Format("2006-01-02 15:04 UTC"), r.NumCPU, r.GOARCH, r.Config.RedisPersistence, r.Config.Duration)
	sty := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(13)), Handler: plot.DefaultTextHandler,
		XAlign: draw.XCenter, YAlign: draw.YCenter}
	dc.FillText(sty, vg.Point{X: width / 2, Y: height - header/2}, title)

	body := draw.Crop(dc, 0, 0, 0, -header)
	tiles := draw.Tiles{Rows: len(groups), Cols: cols, PadX: vg.Millimeter * 6, PadY: vg.Millimeter * 6,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 4}
	canvases := plot.Align(plots, tiles, body)
	for i := range plots {
		for j := range plots[i] {
			if plots[i][j] != nil {
				plots[i][j].Draw(canvases[i][j])
			}
		}
	}
	_, err := vgimg.PngCanvas{Canvas: img}.WriteTo(w)
	return err
}

// chartGroup is one scenario's results, one series per backend.
type chartGroup struct {
	scenario string
	backends []string
	series   map[string][]Result // by backend, ordered by clients
	clients  []int
}

func (r *Report) chartGroups() []*chartGroup {
	var all []*chartGroup
	byName := map[string]*chartGroup{}
	for _, res := range r.Results {
		if res.OpsPerSec <= 0 && res.P50Ms <= 0 {
			continue
		}
		g := byName[res.Scenario]
		if g == nil {
			g = &chartGroup{scenario: res.Scenario, series: map[string][]Result{}}
			byName[res.Scenario] = g
			all = append(all, g)
		}
		b := res.Backend
		if _, ok := g.series[b]; !ok {
			g.backends = append(g.backends, b)
		}
		// A level measured twice (a scenario repeated at another size)
		// keeps its first measurement.
		if !slices.ContainsFunc(g.series[b], func(o Result) bool { return o.Clients == res.Clients }) {
			g.series[b] = append(g.series[b], res)
		}
		if !slices.Contains(g.clients, res.Clients) {
			g.clients = append(g.clients, res.Clients)
		}
	}
	var multi []*chartGroup
	for _, g := range all {
		for _, b := range g.backends {
			slices.SortFunc(g.series[b], func(x, y Result) int { return x.Clients - y.Clients })
		}
		slices.Sort(g.clients)
		if len(g.clients) > 1 {
			multi = append(multi, g)
		}
	}
	if len(multi) > 0 {
		return multi
	}
	return all
}

// backendColor gives each backend the same colour in every panel.
func backendColor(b string) color.Color {
	switch b {
	case "mem":
		return color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff}
	case "file":
		return color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	case "s3":
		return color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff}
	case "redis":
		return color.RGBA{R: 0x94, G: 0x67, B: 0xbd, A: 0xff}
	case "process": // hostile-queries: SQL in a worker process
		return color.RGBA{R: 0x17, G: 0xbe, B: 0xcf, A: 0xff}
	case "none": // hostile-queries: SQL in the server process
		return color.RGBA{R: 0x8c, G: 0x56, B: 0x4b, A: 0xff}
	}
	return color.RGBA{R: 0xff, G: 0x7f, B: 0x0e, A: 0xff}
}

func (g *chartGroup) newPlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = "clients"
	p.Y.Label.Text = ylabel
	p.X.Scale, p.Y.Scale = plot.LogScale{}, plot.LogScale{}
	var ticks plot.ConstantTicks
	for _, c := range g.clients {
		ticks = append(ticks, plot.Tick{Value: float64(c), Label: strconv.Itoa(c)})
	}
	p.X.Tick.Marker = ticks
	p.Y.Tick.Marker = logTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top, p.Legend.Left = true, true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	p.Legend.Padding = vg.Points(1.5)
	p.Legend.ThumbnailWidth = vg.Points(18)
	// A single level still needs an x range a log scale can draw.
	lo, hi := float64(g.clients[0]), float64(g.clients[len(g.clients)-1])
	if lo == hi {
		lo, hi = lo/2, hi*2
	}
	p.X.Min, p.X.Max = lo/1.3, hi*1.3
	return p
}

// ylimits sets a log axis around the positive values vs.
func ylimits(p *plot.Plot, vs []float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	p.Y.Min, p.Y.Max = lo/1.6, hi*4 // room above for the legend
}

func (g *chartGroup) throughputPlot() *plot.Plot {
	p := g.newPlot(g.scenario+" — throughput", "ops/s")
	ylimits(p, g.addSeries(p, func(r Result) float64 { return r.OpsPerSec }))
	return p
}

// addSeries draws one line per backend of the value y of its results
// (those with y > 0) and returns the values drawn.
func (g *chartGroup) addSeries(p *plot.Plot, y func(Result) float64) []float64 {
	var vs []float64
	for _, b := range g.backends {
		l, pts, drawn := g.line(b, y)
		if l == nil {
			continue
		}
		vs = append(vs, drawn...)
		l.Width = vg.Points(1.5)
		p.Add(l, pts)
		p.Legend.Add(seriesName(b), l, pts)
	}
	return vs
}

// line is backend b's line of the value y of its results (those with
// y > 0), in its colour, and the values on it; nil when there are none.
func (g *chartGroup) line(b string, y func(Result) float64) (*plotter.Line, *plotter.Scatter, []float64) {
	var xys plotter.XYs
	var vs []float64
	for _, r := range g.series[b] {
		if v := y(r); v > 0 {
			xys = append(xys, plotter.XY{X: float64(r.Clients), Y: v})
			vs = append(vs, v)
		}
	}
	if len(xys) == 0 {
		return nil, nil, nil
	}
	l, pts, err := plotter.NewLinePoints(xys)
	if err != nil {
		return nil, nil, nil
	}
	c := backendColor(b)
	l.Color, pts.Color, pts.Shape = c, c, draw.CircleGlyph{}
	return l, pts, vs
}

// ratioPlot draws the results' ratios to their binding ceilings (nil if
// no result has one): 1 is the ceiling.
func (g *chartGroup) ratioPlot() *plot.Plot {
	p := g.newPlot(g.scenario+" — ratio to its ceiling", "ratio")
	p.Y.Scale, p.Y.Tick.Marker = plot.LinearScale{}, plot.DefaultTicks{}
	top := 0.0
	for _, v := range g.addSeries(p, func(r Result) float64 { return r.Ratio }) {
		top = max(top, v)
	}
	if top == 0 {
		return nil
	}
	one, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: 1}, {X: p.X.Max, Y: 1}})
	if err == nil {
		one.Color, one.Dashes = color.Gray{Y: 0x80}, []vg.Length{vg.Points(4), vg.Points(3)}
		p.Add(one)
	}
	p.Y.Min, p.Y.Max = 0, max(1.1, top)*1.35 // room above for the legend
	return p
}

// The dash pattern of each percentile.
var percentileDashes = []struct {
	name   string
	dashes []vg.Length
	get    func(Result) float64
}{
	{"p50", nil, func(r Result) float64 { return r.P50Ms }},
	{"p95", []vg.Length{vg.Points(5), vg.Points(3)}, func(r Result) float64 { return r.P95Ms }},
	{"p99", []vg.Length{vg.Points(1.5), vg.Points(2)}, func(r Result) float64 { return r.P99Ms }},
}

func (g *chartGroup) latencyPlot() *plot.Plot {
	p := g.newPlot(g.scenario+" — latency (p50 solid, p95 dashed, p99 dotted)", "ms")
	var vs []float64
	for _, b := range g.backends {
		first := true
		for _, pc := range percentileDashes {
			l, pts, drawn := g.line(b, pc.get)
			if l == nil {
				continue
			}
			vs = append(vs, drawn...)
			l.Width, l.Dashes, pts.Radius = vg.Points(1.2), pc.dashes, vg.Points(1.5)
			p.Add(l, pts)
			if first {
				p.Legend.Add(seriesName(b), l)
				first = false
			}
		}
	}
	ylimits(p, vs)
	return p
}

func seriesName(backend string) string {
	if backend == "" {
		return "-"
	}
	return backend
}

// logTicks labels a log axis at 1, 2 and 5 times each power of ten, with
// unlabelled minor ticks between.
type logTicks struct{}

func (logTicks) Ticks(lo, hi float64) []plot.Tick {
	var ticks []plot.Tick
	for e := math.Floor(math.Log10(lo)); math.Pow(10, e) <= hi; e++ {
		base := math.Pow(10, e)
		for m := 1; m < 10; m++ {
			v := base * float64(m)
			if v < lo || v > hi {
				continue
			}
			t := plot.Tick{Value: v}
			if m == 1 || m == 2 || m == 5 {
				t.Label = strconv.FormatFloat(v, 'g', -1, 64)
			}
			ticks = append(ticks, t)
		}
	}
	return ticks
}
