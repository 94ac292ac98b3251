package httpapi

import (
	"context"
	"errors"
	"fmt"
	stdlog "log"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// Config is what the server serves. Every field is optional.
type Config struct {
	// Addr is the listen address, "host:port"; port 0 picks a free one (see
	// Server.Addr). Default 127.0.0.1:8080.
	Addr string
	// Metrics is gathered at every GET /metrics (by promhttp, from the
	// server's goroutines); nil serves an empty exposition.
	Metrics prometheus.Gatherer
	// Live answers /healthz: nil is healthy. It is called on every
	// request, from the server's goroutines; nil Live means always
	// healthy.
	Live func() error
	// Ready answers /readyz. It is called on every request, from the
	// server's goroutines, so it must be safe for concurrent use and fast.
	// Nil means ready as soon as the server runs.
	// It returns nil when ready, else why not (the body of the 503).
	Ready func() error
	// Checkpoints answers /api/checkpoints; its result is encoded with
	// encoding/json. Same concurrency rules as Ready. Nil answers 503.
	Checkpoints func() (any, error)
	// Job answers /api/job (the job's config, state, counters and
	// partitions; the web page at / polls it), like Checkpoints: encoded
	// with encoding/json, called from the server's goroutines. Nil
	// answers 503.
	Job func() (any, error)
	// Log receives request failures and server errors.
	Log zerolog.Logger
}

// DefaultAddr is the listen address when Config.Addr is empty.
const DefaultAddr = "127.0.0.1:8080"

// Server is a running HTTP server. The caller MUST call Close to stop it.
type Server struct {
	srv  *http.Server
	ln   net.Listener
	done chan struct{} // closed when Serve has returned
}

// Start listens on cfg.Addr and serves in a goroutine. It returns once the
// listener is bound, so requests to Addr succeed as soon as it returns.
func Start(cfg Config) (*Server, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return nil, fmt.Errorf("http: listen on %s: %w", cfg.Addr, err)
	}
	log := cfg.Log.With().Str("component", "http").Str("addr", ln.Addr().String()).Logger()
	cfg.Log = log
	s := &Server{
		srv: &http.Server{
			Handler:           newMux(cfg),
			ReadHeaderTimeout: 5 * time.Second,
			ErrorLog:          stdlog.New(errorWriter{log}, "", 0), // net/http's own complaints, into zerolog
		},
		ln:   ln,
		done: make(chan struct{}),
	}
	go func() {
		defer close(s.done)
		if err := s.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error().Err(err).Msg("http server stopped")
		}
	}()
	log.Info().Msg("http server listening")
	return s, nil
}

// Addr is the address the server listens on, with the real port when
// Config.Addr asked for port 0.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops accepting connections and waits, until ctx is done, for the
// requests in flight to finish (graceful shutdown). After ctx is done it
// closes the remaining connections and returns ctx's error.
func (s *Server) Close(ctx context.Context) error {
	err := s.srv.Shutdown(ctx)
	if err != nil {
		_ = s.srv.Close()
		err = fmt.Errorf("http: shutdown: %w", err)
	}
	<-s.done
	return err
}

// errorWriter logs each line net/http writes (a handler's panic, an accept
// error) as one event at error level: a zerolog.Logger used as a writer
// logs without a level, past any log.level.
type errorWriter struct{ log zerolog.Logger }

func (w errorWriter) Write(p []byte) (int, error) {
	w.log.Error().Msg(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}
