package main

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
)

// A chart is a grid of panels, each a horizontal bar chart, drawn with the
// standard library only (image/png and the bitmap font in font.go), so that
// the bench needs nothing beyond the module's dependencies.

type panel struct {
	Title string
	Bars  []bar
}

type bar struct {
	Label string
	Value float64
	Text  string // printed at the bar's end
	Kind  string // raw | connector | flink: the bar's colour
}

var (
	white     = color.RGBA{255, 255, 255, 255}
	black     = color.RGBA{20, 20, 20, 255}
	grey      = color.RGBA{150, 150, 150, 255}
	lightGrey = color.RGBA{225, 225, 225, 255}
	blue      = color.RGBA{45, 110, 190, 255}
	orange    = color.RGBA{230, 130, 30, 255}
	green     = color.RGBA{60, 150, 80, 255}
	palette   = color.Palette{white, black, grey, lightGrey, blue, orange, green}
)

func kindColor(kind string) color.Color {
	switch kind {
	case "raw", "pgcopy":
		return grey
	case "flink", "kconnect":
		return orange
	case "connector":
		return blue
	}
	return green
}

const (
	scale     = 2
	lineH     = glyphH * scale
	panelW    = 640
	labelW    = 210
	valueW    = 120
	barH      = 22
	barGap    = 8
	titleH    = 34
	panelPad  = 16
	headerH   = 44
	chartCols = 2
)

func panelHeight(p panel) int {
	return titleH + len(p.Bars)*(barH+barGap) + panelPad
}

// writeChart draws the panels two per row under title and writes a PNG.
func writeChart(path, title string, panels []panel) error {
	rows := (len(panels) + chartCols - 1) / chartCols
	heights := make([]int, rows)
	for i, p := range panels {
		heights[i/chartCols] = max(heights[i/chartCols], panelHeight(p))
	}
	h := headerH
	for _, rh := range heights {
		h += rh
	}
	w := chartCols * panelW
	img := image.NewPaletted(image.Rect(0, 0, w, h), palette)
	fill(img, img.Bounds(), white)
	drawText(img, panelPad, 14, title, scale, black)

	y := headerH
	for r := range rows {
		for c := range chartCols {
			i := r*chartCols + c
			if i >= len(panels) {
				break
			}
			drawPanel(img, c*panelW, y, panels[i])
		}
		y += heights[r]
	}

	f, err := os.Create(path)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(f)
	if err := (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(bw, img); err != nil {
		f.Close()
		return err
	}
	if err := bw.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func drawPanel(img *image.Paletted, x0, y0 int, p panel) {
	drawText(img, x0+panelPad, y0+8, p.Title, scale, black)
	hi := 0.0
	for _, b := range p.Bars {
		hi = max(hi, b.Value)
	}
	barX := x0 + panelPad + labelW
	barMax := panelW - 2*panelPad - labelW - valueW
	// a light axis line at zero
	fill(img, image.Rect(barX-1, y0+titleH-2, barX, y0+titleH+len(p.Bars)*(barH+barGap)-barGap+2), grey)
	for i, b := range p.Bars {
		y := y0 + titleH + i*(barH+barGap)
		label := b.Label
		for textWidth(label, scale) > labelW-10 && len(label) > 1 {
			label = label[:len(label)-1]
		}
		drawText(img, x0+panelPad, y+(barH-lineH)/2, label, scale, black)
		n := 0
		if hi > 0 && b.Value > 0 {
			n = max(1, int(float64(barMax)*b.Value/hi+0.5))
		}
		fill(img, image.Rect(barX, y, barX+barMax, y+barH), lightGrey)
		fill(img, image.Rect(barX, y, barX+n, y+barH), kindColor(b.Kind))
		drawText(img, barX+barMax+8, y+(barH-lineH)/2, b.Text, scale, black)
	}
}

func fill(img *image.Paletted, r image.Rectangle, c color.Color) {
	idx := uint8(img.Palette.Index(c))
	r = r.Intersect(img.Bounds())
	for y := r.Min.Y; y < r.Max.Y; y++ {
		for x := r.Min.X; x < r.Max.X; x++ {
			img.SetColorIndex(x, y, idx)
		}
	}
}

// human formats v with a k/M suffix and about three significant digits.
func human(v float64) string {
	switch {
	case v >= 10e6:
		return fmt.Sprintf("%.0fM", v/1e6)
	case v >= 1e6:
		return fmt.Sprintf("%.2fM", v/1e6)
	case v >= 10e3:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return fmt.Sprintf("%.1fk", v/1e3)
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	}
	return fmt.Sprintf("%.2f", v)
}
