package httpapi

import (
	_ "embed" // the page's files
	"net/http"
)

// The web page: plain HTML, CSS and JavaScript, embedded in the binary (no
// build step, nothing fetched from elsewhere). It polls /api/job and
// /api/checkpoints; ui/app.js says what it shows.
var (
	//go:embed ui/index.html
	indexHTML []byte
	//go:embed ui/app.js
	appJS []byte
	//go:embed ui/charts.js
	chartsJS []byte
	//go:embed ui/style.css
	styleCSS []byte
)

// uiAssets are the page's files by route, with their content types.
var uiAssets = []struct {
	pattern, contentType string
	body                 []byte
}{
	{"GET /{$}", "text/html; charset=utf-8", indexHTML}, // "/" only: other paths stay 404
	{"GET /ui/app.js", "text/javascript; charset=utf-8", appJS},
	{"GET /ui/charts.js", "text/javascript; charset=utf-8", chartsJS},
	{"GET /ui/style.css", "text/css; charset=utf-8", styleCSS},
}

// contentSecurityPolicy lets the page load its own files only: no inline
// script, nothing from another origin.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// handleUI routes the page's files on mux.
func handleUI(mux *http.ServeMux) {
	for _, a := range uiAssets {
		mux.HandleFunc(a.pattern, func(w http.ResponseWriter, _ *http.Request) {
			h := w.Header()
			h.Set("Content-Type", a.contentType)
			h.Set("Cache-Control", "no-cache") // a new binary's page shows up at the next load
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Content-Security-Policy", contentSecurityPolicy)
			_, _ = w.Write(a.body)
		})
	}
}
