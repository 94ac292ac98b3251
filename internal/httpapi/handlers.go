package httpapi

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/rs/zerolog"

	"github.com/connector-dev/connector/internal/metrics"
)

func newMux(cfg Config) *http.ServeMux {
	mux := http.NewServeMux()
	// A "GET" pattern also serves HEAD; other methods get 405.
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeText(w, http.StatusOK, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if cfg.Ready != nil && !cfg.Ready() {
			writeText(w, http.StatusServiceUnavailable, "not ready")
			return
		}
		writeText(w, http.StatusOK, "ready")
	})
	mux.Handle("GET /metrics", metricsHandler(cfg.Registry, cfg.Log))
	mux.Handle("GET /api/checkpoints", checkpointsHandler(cfg.Checkpoints, cfg.Log))
	return mux
}

func writeText(w http.ResponseWriter, code int, body string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write([]byte(body + "\n"))
}

func metricsHandler(reg *metrics.Registry, log zerolog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		var buf bytes.Buffer
		if reg != nil {
			// Rendered into memory first, so a failure can still be a 500.
			if err := reg.WritePrometheus(&buf); err != nil {
				log.Error().Err(err).Msg("render /metrics")
				writeText(w, http.StatusInternalServerError, err.Error())
				return
			}
		}
		w.Header().Set("Content-Type", metrics.ContentType)
		_, _ = w.Write(buf.Bytes())
	}
}

func checkpointsHandler(list func() (any, error), log zerolog.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if list == nil {
			writeJSONError(w, http.StatusServiceUnavailable, "checkpoints are not available")
			return
		}
		v, err := list()
		if err != nil {
			log.Error().Err(err).Msg("list checkpoints for /api/checkpoints")
			writeJSONError(w, http.StatusInternalServerError, err.Error())
			return
		}
		body, err := json.MarshalIndent(v, "", "  ")
		if err != nil {
			log.Error().Err(err).Msg("encode /api/checkpoints")
			writeJSONError(w, http.StatusInternalServerError, "encode checkpoints: "+err.Error())
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
