package httpapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/zerolog"
)

func newMux(cfg Config) *http.ServeMux {
	mux := http.NewServeMux()
	// A "GET" pattern also serves HEAD; other methods get 405.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Live != nil {
			if err := cfg.Live(); err != nil {
				writeText(w, http.StatusServiceUnavailable, "unhealthy: "+err.Error())
				return
			}
		}
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Ready != nil {
			if err := cfg.Ready(); err != nil {
				writeText(w, http.StatusServiceUnavailable, "not ready: "+err.Error())
				return
			}
		}
		writeText(w, http.StatusOK, "ready")
	})
	mux.Handle("GET /metrics", metricsHandler(cfg.Metrics, cfg.Log))
	mux.Handle("GET /api/checkpoints", jsonHandler("checkpoints", cfg.Checkpoints, cfg.Log))
	mux.Handle("GET /api/job", jsonHandler("job details", cfg.Job, cfg.Log))
	handleUI(mux)
	return mux
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body + "\n"))
}

// metricsHandler serves g with promhttp: the text format (0.0.4) unless
// the scraper negotiates another. A collector that fails is logged and left
// out; the rest is still served, so one broken source of metrics does not
// blind monitoring to the others.
func metricsHandler(g prometheus.Gatherer, log zerolog.Logger) http.Handler {
	if g == nil {
		g = prometheus.NewRegistry()
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:      promLogger{log},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// promLogger hands promhttp's errors to zerolog.
type promLogger struct{ log zerolog.Logger }

func (l promLogger) Println(v ...any) {
	l.log.Error().Msg(strings.TrimSpace(fmt.Sprintln(v...)))
}

// jsonHandler serves what get returns, encoded as indented JSON: 503
// while get is nil (the process serves no job), 500 with the error when
// get fails. what names the content in messages ("checkpoints").
func jsonHandler(what string, get func() (any, error), log zerolog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if get == nil {
			writeJSONError(w, http.StatusServiceUnavailable, what+" are not available")
			return
		}
		v, err := get()
		if err != nil {
			log.Error().Err(err).Str("path", r.URL.Path).Msg("read " + what)
			writeJSONError(w, http.StatusInternalServerError, err.Error())
			return
		}
		body, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			log.Error().Err(err).Str("path", r.URL.Path).Msg("encode " + what)
			writeJSONError(w, http.StatusInternalServerError, "encode "+what+": "+err.Error())
			return
		}
		writeJSON(w, http.StatusOK, body)
	}
}

func writeJSONError(w http.ResponseWriter, code int, msg string) {
	body, _ := json.Marshal(struct {
		Error string `json:"error"`
	}{msg}) // a struct of one string always marshals
	writeJSON(w, code, body)
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(body, '\n'))
}
